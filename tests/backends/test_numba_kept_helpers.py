"""The helpers' machine code kept on disk: read by a later gradient, never by another astgrad, never mistaken.

Each scenario runs in new processes (a process compiles each helper once, so
only a new one shows what is read from disk), with ``NUMBA_OPT=3``, Numba's
default (the tests' ``NUMBA_OPT=0`` leaves code Numba will not cache).  A
process reports which of astgrad's helper implementations Numba compiled
and the gradient it computed.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

numba = pytest.importorskip("numba")

_SCRIPT = textwrap.dedent('''
    import json, linecache, pathlib, sys
    import numpy as np, astgrad
    from numba.core import event
    stamp, text = sys.argv[1], sys.argv[2]
    if stamp != "-":  # another astgrad: the stamp diskcache keys everything by
        from astgrad.backends.numba import diskcache
        diskcache._environment = lambda: stamp
    package = str(pathlib.Path(astgrad.__file__).parent)
    linecache.cache["edited_by_the_user.py"] = (len(text), None, text.splitlines(True), "edited_by_the_user.py")
    namespace = {"np": np}
    exec(compile(text, "edited_by_the_user.py", "exec"), namespace)
    w, x = np.linspace(0.1, 0.9, 3).reshape(3, 1), np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    with event.install_recorder("numba:compile") as recorded:
        gradient = astgrad.grad(namespace["f"], backend="numba")(w, x)
    def helper(e):
        code = e.data["dispatcher"].py_func.__code__
        return code.co_filename.startswith(package) or code.co_filename.startswith("<astgrad numba helper")
    helpers = sorted({e.data["dispatcher"].py_func.__qualname__ for _, e in recorded.buffer if e.is_start and helper(e)})
    print(json.dumps({"helpers": helpers, "gradient": gradient.tolist()}))
''')

_PROGRAM = ("def f(w, x):\n    v = np.array([w[0, 0] * x[0, 0], w[1, 0] * x[1, 1]])  # {}\n"
            "    return np.sum(np.sin(w * x) * x) + np.sum(v * v)\n")


def _run(cache, stamp="-", version=0):
    """One new process computing the gradient of the program (its comment ``version``: a new text, so the
    gradient's own code is compiled again and only the helpers can come from disk).  The program calls helpers
    written in astgrad's files and helpers compiled from text per kind of argument (np.array's gradient)."""
    env = dict(os.environ, NUMBA_OPT="3", ASTGRAD_NUMBA_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", _SCRIPT, stamp, _PROGRAM.format(version)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _expected():
    w, x = np.linspace(0.1, 0.9, 3).reshape(3, 1), np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    expected = np.sum(np.cos(w * x) * x * x, axis=1, keepdims=True)
    expected[0, 0] += 2 * w[0, 0] * x[0, 0] ** 2
    expected[1, 0] += 2 * w[1, 0] * x[1, 1] ** 2
    return expected


def test_a_later_gradient_reads_the_helpers_and_another_astgrad_compiles_its_own(tmp_path):
    first = _run(tmp_path, version=1)
    assert any(name.endswith("same_rank") for name in first["helpers"]) and len(first["helpers"]) >= 4  # and kept
    assert list((tmp_path / "helpers").glob("*/*.nbi"))
    second = _run(tmp_path, version=2)  # a new program: its own code compiles, no helper does but the block
    # unbroadcast runs in object mode (w is (3, 1)), which Numba compiles where it first runs and never keeps
    assert [name.rsplit(".", 1)[-1] for name in second["helpers"]] == ["summed_in_numpy"]
    other = _run(tmp_path, stamp="astgrad with another helper", version=3)  # never served the code kept above
    assert other["helpers"] == first["helpers"]
    assert len(list((tmp_path / "helpers").iterdir())) == 2  # each astgrad's kept apart: neither overwrites the other
    for run in (first, second, other):
        np.testing.assert_allclose(run["gradient"], _expected(), rtol=1e-12)


def test_nothing_is_kept_when_caching_is_off_and_an_unwritable_directory_is_no_error(tmp_path):
    blocked = tmp_path / "a file, not a directory"
    blocked.write_text("")
    for cache in ("0", blocked):
        run = _run(cache, version=4)
        assert any(name.endswith("same_rank") for name in run["helpers"])
        np.testing.assert_allclose(run["gradient"], _expected(), rtol=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file, not a directory"]


def test_implementations_with_one_bytecode_and_other_constants_are_kept_apart(tmp_path, monkeypatch):
    """Numba keys a function's code by its bytecode, not its constants: two texts compiled per axis or per
    rank, equal but for a number, must not share an entry.  Each function's file is named by its whole code."""
    from astgrad.backends.numba import kept_helpers
    monkeypatch.setenv("ASTGRAD_NUMBA_CACHE", str(tmp_path))

    def made(text):
        namespace = {}
        exec(compile(text, "<astgrad numba helper>", "exec"), namespace)
        return namespace["implementation"]

    one, two, again = (made(f"def implementation(a):\n    return a + {k}\n") for k in (1, 2, 1))
    assert one.__code__.co_code == two.__code__.co_code
    names = [kept_helpers._identity(f) for f in (one, two, again)]
    assert names[0] != names[1] and names[0] == names[2]
    # one text made with other values of the globals it reads (a dtype, a count): other names too
    texts = [kept_helpers._identity(_made_with(dtype, count)) for dtype, count in
             ((np.float64, 2), (np.float32, 2), (np.float64, 3), (np.float64, 2))]
    assert len(set(texts[:3])) == 3 and texts[0] == texts[3]
    # a global whose value the name cannot say (a Numba function): not kept at all
    assert kept_helpers._identity(_made_with(numba.njit(lambda a: a), 2)) is None


def _made_with(dtype, count):
    namespace = {"np": np, "dtype": dtype, "count": count, "__name__": __name__}
    exec(compile("def implementation(a):\n    return np.zeros(count, dtype) + a\n", "<astgrad numba helper>", "exec"),
         namespace)
    return namespace["implementation"]


def test_a_helper_compiled_for_a_caller_with_other_flags_is_kept_apart():
    """A helper takes ``error_model`` and ``fastmath`` from the function it is compiled for, and Numba's key
    of its code does not say so: the name covers them (a division by zero raises under "python", gives inf
    under "numpy")."""
    from numba.core import targetconfig
    from numba.core.compiler import Flags
    from astgrad.backends.numba import kept_helpers

    def under(**options):
        flags = Flags()
        for name, value in options.items():
            setattr(flags, name, value)
        with targetconfig.ConfigStack().enter(flags):
            return kept_helpers._identity(_made_with(np.float64, 2), kept_helpers._inherited())

    python, numpy_model, fast = under(error_model="python"), under(error_model="numpy"), under(fastmath=True)
    assert len({python, numpy_model, fast}) == 3 and python == under(error_model="python")
