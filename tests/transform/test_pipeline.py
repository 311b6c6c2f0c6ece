"""The pipeline: named passes in order, show(f, stage=...), and the optimisation levels.

Each pass is looked at on a small function, through the source shown before
and after it; every level's gradient is checked against finite differences.
"""

import linecache
import os
import subprocess
import sys

import numpy as np
import pytest

import astgrad
from astgrad.transform import STAGES
from astgrad.transform.pipeline import CALLEE, ENTRY, FORWARD, FORWARD_CALLEE, FRONT

from _numeric import numeric_grad

pytestmark = pytest.mark.optimize(2)  # what show() prints without optimize= is level 2's source

X = np.array([0.3, -0.2, 0.5])
W = np.array([[0.5, -0.1, 0.2], [0.3, 0.8, -0.4], [0.1, 0.2, 0.9]])


def straight(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def layer(x, w):
    h = np.tanh(x @ w + 1.0)
    return np.sum(h * h)


def looped(x):
    s = x
    for i in range(3):
        s = s * 0.5 + np.sin(s)
    return np.sum(s)


def stage(f, name, **kwargs):
    return astgrad.show(f, stage=name, **kwargs)


def body(text):
    """The statements of a shown function, comments and header left out."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


# -- the list -------------------------------------------------------------------

def test_the_stages_run_in_the_documented_order():
    order = ["parse", "check", "normalize", "analyse", "reverse", "dead_code", "emit"]
    assert [s for s in STAGES if s in order] == order
    assert STAGES[0] == "parse" and STAGES[-1] == "emit"
    assert len(set(STAGES)) == len(STAGES)


#: the passes that choose how the reverse sweep works, each from its level (they change no number)
CHOICES = ("fusion", "scalar_seeds", "remat")
#: optimisations of the normal form before the sweep, not needed for a correct adjoint (passes/number_updates.py)
NORMAL_FORM_OPTIMISATIONS = ("number_updates",)


def test_every_pass_says_what_it_does_and_levels_only_grow_after_reverse():
    for p in ENTRY + CALLEE:
        assert p.run.__doc__, p.name
        assert p.level in (0, 1, 2)
    made = [p for p in ENTRY[:STAGES.index("reverse") + 1] if p.name not in CHOICES + NORMAL_FORM_OPTIMISATIONS]
    assert all(p.level == 0 for p in made)  # the passes that make a correct adjoint run at every level
    assert [p.name for p in ENTRY if p.name in CHOICES] == list(CHOICES)  # the sweep's choices, just before it
    assert ENTRY[-1].level == 0


def test_every_list_starts_with_the_one_front_end():
    assert [p.name for p in FRONT] == ["parse", "check", "generated_stack", "normalize", "check_aliasing"]
    for passes in (ENTRY, CALLEE, FORWARD, FORWARD_CALLEE):
        assert passes[:len(FRONT)] == FRONT
    callee_only = {p.name for p in CALLEE if p.run not in {q.run for q in ENTRY}}
    assert callee_only == {"reverse", "split", "in_place"}  # its own sweep, the cut into a pair, each half's writes


# -- show -----------------------------------------------------------------------------

def test_show_prints_and_returns_the_source_after_a_stage(capsys):
    text = stage(straight, "normalize")
    assert capsys.readouterr().out == text + "\n"
    assert body(text) == ["def straight(x):", "y = x + 2", "t1 = y * y", "z = t1 * 3",
                          "result = np.mean(z)", "return result"]


def test_show_before_normalize_is_the_users_function():
    assert body(stage(straight, "parse")) == ["def straight(x):", "y = x + 2", "z = y * y * 3", "return z.mean()"]
    assert stage(straight, "check") == stage(straight, "parse")


def test_show_of_emit_is_the_source_that_runs():
    assert stage(straight, "emit") == astgrad.grad(straight).source
    assert astgrad.show(straight) == astgrad.grad(straight).source


def test_show_follows_wrt_and_the_level():
    assert stage(layer, "emit", wrt=1, optimize=0) == astgrad.grad(layer, wrt=1, optimize=0).source


@pytest.mark.parametrize("name", STAGES)
def test_show_works_after_every_stage(name):
    text = stage(layer, name)
    compile(text, "<shown>", "exec")  # each stage is valid Python


def test_an_unknown_stage_raises_and_lists_the_stages():
    with pytest.raises(ValueError) as info:
        astgrad.show(straight, stage="optimise")
    assert "'optimise'" in str(info.value)
    for name in STAGES:
        assert name in str(info.value)


def test_a_stage_the_level_does_not_run_is_refused_with_the_level_it_needs():
    with pytest.raises(ValueError, match=r"'release_arrays' runs at optimize=2.*pass optimize=2"):
        astgrad.show(straight, stage="release_arrays", optimize=1)


# -- each pass on a small input ---------------------------------------------------------

def test_reverse_writes_the_adjoint_as_the_rules_do_at_level_0():
    lines = body(stage(straight, "reverse", optimize=0))
    assert "dz = filled(dresult / size(z), shape(z))" in lines  # mean's rule, spread to z's shape
    assert "dt1 = dz * 3" in lines


def test_reverse_fuses_elementwise_chains_and_keeps_scalar_seeds_from_level_1():
    lines = body(stage(straight, "reverse", optimize=1))
    assert "dz = dresult / size(z)" in lines
    assert "dy = 6 * dz * y" in lines


def recurrent(x, w):
    h = x
    for i in range(3):
        a = h * w
        h = np.tanh(a) + a * h  # a * h reads h: the adjoint restores h anyway, so a is recomputed from it
    return np.sum(h)


def test_the_reverse_sweeps_choices_are_passes_that_show_what_they_chose():
    fused = stage(straight, "fusion", optimize=1)
    assert "# fused, each group one adjoint expression: t1, z" in fused
    assert body(fused) == body(stage(straight, "check_output", optimize=1))  # a choice changes no code yet
    assert "# adjoints that are numbers kept as numbers" in stage(straight, "scalar_seeds", optimize=1)
    assert "# recomputed in the adjoint instead of saved: a" in stage(recurrent, "remat", optimize=2)
    assert "# recomputed in the adjoint instead of saved: nothing" in stage(straight, "remat", optimize=2)


def test_a_choice_is_taken_only_from_its_level():
    with pytest.raises(ValueError, match="runs at optimize=2"):
        stage(recurrent, "remat", optimize=1)
    with pytest.raises(ValueError, match="runs at optimize=1"):
        stage(straight, "fusion", optimize=0)
    at_1 = astgrad.grad(recurrent, optimize=1).source
    at_2 = astgrad.grad(recurrent, optimize=2).source
    assert at_1.count("_stack.append(a)") == 1 and "_stack.append(a)" not in at_2  # a recomputed, not saved, at 2
    x, w = np.linspace(0.1, 0.5, 4), np.linspace(-0.3, 0.4, 4)
    np.testing.assert_allclose(astgrad.grad(recurrent, optimize=1)(x, w), astgrad.grad(recurrent, optimize=2)(x, w))
    np.testing.assert_allclose(astgrad.grad(recurrent)(x, w), numeric_grad(recurrent, (x, w), 0), rtol=1e-6)


def test_dead_code_drops_what_nothing_reads():
    assert "result = np.sum(t3)" in body(stage(layer, "reverse", optimize=1))
    assert not any(line.startswith(("result =", "t3 =")) for line in body(stage(layer, "dead_code", optimize=1)))


def test_static_shapes_read_a_shape_from_a_name_of_that_shape():
    assert "dz = dresult / size(z)" in body(stage(straight, "dead_code"))
    after = body(stage(straight, "static_shapes"))
    assert "dz = dresult / size(x)" in after  # z = 3 * (x + 2) ** 2 has x's shape
    assert not any(line.startswith(("z =", "t1 =")) for line in after)  # and is not computed


def test_inline_temporaries_writes_a_single_use_temporary_into_its_reader():
    assert "h = np.tanh(t1)" in body(stage(layer, "dead_code"))
    assert "h = np.tanh(x @ w + 1.0)" in body(stage(layer, "inline_temporaries"))


def test_read_through_copies():
    assert "dt3 = dresult" in body(stage(layer, "compute_only_shapes"))
    after = body(stage(layer, "read_through_copies"))
    assert "dt3 = dresult" not in after and "dh = 2 * dresult * h" in after


def test_saves_in_locals_takes_saves_outside_loops_off_the_stack():
    def branchy(x):
        if np.sum(x) > 0:
            y = np.sin(x)
        else:
            y = np.cos(x)
        return np.sum(y * x)
    assert "if _stack.pop():" in body(stage(branchy, "read_through_copies"))
    after = stage(branchy, "saves_in_locals")
    assert "if t1:" in body(after) and not any("_stack" in line for line in body(after))


def test_release_arrays_deletes_after_the_last_read():
    assert "del dh, h" not in body(stage(layer, "saves_in_locals"))
    assert "del dh, h" in body(stage(layer, "release_arrays"))


def test_in_place_writes_into_a_temporary_nothing_reads_again():
    assert "dt2 = dh * (1 - h * h)" in body(stage(layer, "release_arrays"))
    assert "dt2 = multiply_into(dh, 1 - h * h)" in body(stage(layer, "in_place"))


# -- levels ----------------------------------------------------------------------------

@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("f, args, wrt", [(straight, (X,), 0), (layer, (X, W), (0, 1)), (looped, (X,), 0)])
def test_every_level_gives_the_numeric_gradient(f, args, wrt, level):
    got = astgrad.grad(f, wrt=wrt, optimize=level)(*args)
    got = got if isinstance(wrt, tuple) else (got,)
    for value, index in zip(got, wrt if isinstance(wrt, tuple) else (wrt,)):
        np.testing.assert_allclose(value, numeric_grad(f, args, index), rtol=1e-6, atol=1e-8)


def test_level_0_has_no_memory_work_and_level_1_no_del():
    def softmax_loss(logits, y):
        m = np.max(logits, axis=1, keepdims=True)
        lse = m + np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
        return -np.mean(np.sum(y * (logits - lse), axis=1))
    logits = np.random.default_rng(0).normal(size=(64, 80))
    y = np.eye(80)[np.arange(64) % 80]
    sources = {level: astgrad.grad(softmax_loss, optimize=level).source for level in (0, 1, 2)}
    for word in ("del ", "_into(", "Shaped(", "only_shape("):
        assert word not in sources[0] and word not in sources[1], word
    assert "del " in sources[2] and "Shaped(" in sources[2]
    values = [astgrad.grad(softmax_loss, optimize=level)(logits, y) for level in (0, 1, 2)]
    np.testing.assert_allclose(values[0], values[2], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(values[1], values[2], rtol=1e-12, atol=1e-15)


def test_the_cache_keeps_one_gradient_per_level():
    assert astgrad.grad(straight, optimize=1) is astgrad.grad(straight, optimize=1)
    assert astgrad.grad(straight, optimize=1) is not astgrad.grad(straight, optimize=2)
    assert astgrad.grad(straight) is astgrad.grad(straight, optimize=2)


@pytest.mark.parametrize("make", [astgrad.grad, astgrad.value_and_grad, astgrad.vjp])
@pytest.mark.parametrize("level", [0, 1])
def test_the_source_is_the_code_that_runs_at_every_level(make, level):
    g = make(straight, optimize=level)
    assert f"at optimize={level}" in g.source.splitlines()[0]
    filename = g._generated.function.__code__.co_filename
    assert "".join(linecache.getlines(filename)) == g.source


@pytest.mark.parametrize("bad", [3, -1, "2", 1.0, True])
def test_an_unknown_level_is_refused(bad):
    with pytest.raises(ValueError, match="optimize="):
        astgrad.grad(straight, optimize=bad)


def test_the_environment_sets_the_default_level(tmp_path):
    script = tmp_path / "level.py"
    script.write_text("import astgrad\n"
                      "def f(x):\n    return x * x\n"
                      "print(astgrad.grad(f).source.splitlines()[0])\n")
    code = str(script)
    env = dict(os.environ, ASTGRAD_OPTIMIZE="0", PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, code], env=env, capture_output=True, text=True, check=True)
    assert "at optimize=0" in out.stdout
    env["ASTGRAD_OPTIMIZE"] = "fast"
    out = subprocess.run([sys.executable, code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "ASTGRAD_OPTIMIZE='fast'" in out.stderr
