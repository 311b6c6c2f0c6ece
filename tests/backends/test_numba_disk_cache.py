"""backend="numba" keeps its machine code on disk, and a kept one is never out of date.

The cache serves a gradient only where everything the machine code depends
on is what it was: the generated text (the function's source, its callees,
the rules written in), the module-level numbers compiled in, astgrad's own
code.  Each test makes a second gradient in the same process, which reads
the cache as a new process would (Numba looks on disk for each new
dispatcher), and checks its numbers against central differences.
"""

import linecache
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")

RATE = 2.0


def scaled(x):
    return np.sum(np.sin(x)) * RATE  # RATE times a number: no unbroadcast (whose object mode, below, OPT=0 cannot cache)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTGRAD_NUMBA_CACHE", str(tmp_path))
    return tmp_path


def _compiled(gradient):
    """Numba's dispatcher behind a numba gradient that has been called."""
    return gradient._generated.function.compiled


def _hits(gradient):
    return sum(_compiled(gradient).stats.cache_hits.values())


def _from_source(text, name, filename="edited_by_the_user.py"):
    """A function defined from ``text`` under ``filename`` (an edited file read again, or the same file read
    by a new process: a new function object each time)."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


def test_a_second_gradient_of_the_same_code_is_read_from_disk_with_the_same_numbers(cache):
    x = np.linspace(-1.0, 1.0, 4)
    text = "def f(x):\n    return np.sum(np.sin(x) * np.cos(x))\n"
    first = astgrad.grad(_from_source(text, "f"), backend="numba")
    want = first(x)
    assert _hits(first) == 0 and list(cache.glob("__pycache__/*.nbi"))
    f = _from_source(text, "f")
    again = astgrad.grad(f, backend="numba")
    got = again(x)
    assert _hits(again) == 1
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, _numeric.gradient(f, x), rtol=1e-7)


def test_an_edited_function_is_compiled_again_not_read_from_the_cache(cache):
    x = np.linspace(-1.0, 1.0, 4)
    before = _from_source("def f(x):\n    return np.sum(np.sin(x) * 2.0)\n", "f")
    np.testing.assert_allclose(astgrad.grad(before, backend="numba")(x), 2.0 * np.cos(x), rtol=1e-12)
    after = _from_source("def f(x):\n    return np.sum(np.sin(x) * 3.0)\n", "f")
    gradient = astgrad.grad(after, backend="numba")
    np.testing.assert_allclose(gradient(x), 3.0 * np.cos(x), rtol=1e-12)
    assert _hits(gradient) == 0


def test_a_changed_module_level_number_is_compiled_again_and_the_old_value_read_back(cache):
    global RATE
    x = np.linspace(-1.0, 1.0, 4)
    gradient = astgrad.grad(scaled, backend="numba")
    np.testing.assert_allclose(gradient(x), 2.0 * np.cos(x), rtol=1e-12)
    try:
        RATE = 5.0
        np.testing.assert_allclose(gradient(x), 5.0 * np.cos(x), rtol=1e-12)  # transformed and compiled again
        assert _hits(gradient) == 0
        RATE = 2.0
        np.testing.assert_allclose(gradient(x), 2.0 * np.cos(x), rtol=1e-12)  # the first value's code, from disk
        assert _hits(gradient) == 1
    finally:
        RATE = 2.0


def test_a_change_of_astgrads_code_is_compiled_again(cache, monkeypatch):
    """A rule or a helper's implementation that changed (astgrad's source: part of every key) is not served
    the machine code compiled with the old one."""
    from astgrad.backends.numba import diskcache
    x = np.linspace(-1.0, 1.0, 4)
    astgrad.grad(scaled, backend="numba")(x)
    files = set(cache.glob("astgrad_*.py"))
    monkeypatch.setattr(diskcache, "_environment", lambda: "astgrad with another rule of np.sin")
    gradient = astgrad.grad(_from_source("def scaled(x):\n    return np.sum(np.sin(x) * 2.0)\n", "scaled"),
                            backend="numba")
    np.testing.assert_allclose(gradient(x), 2.0 * np.cos(x), rtol=1e-12)
    assert _hits(gradient) == 0 and set(cache.glob("astgrad_*.py")) - files


def test_code_refused_for_an_integer_product_is_never_written_to_the_cache(cache):
    """The check that refuses 64-bit integer products reads the typed code, which code read back from the cache
    does not bring for the callees compiled apart: only code that passed the check is written."""
    text = ("def powered(x, n):\n    return x * (n * n)\n\n\ndef twice(x, n):\n"
            "    return np.sum(powered(x, n) + powered(2.0 * x, n))\n")
    for name, line in (("powered", 2), ("twice", 2)):
        for _ in range(2):  # a new process would compile again, and refuse again
            gradient = astgrad.grad(_from_source(text, name), backend="numba")
            for _ in range(2):  # and again on the same gradient, whose dispatcher holds the refused code
                with pytest.raises(astgrad.TransformError, match="multiplies integers") as info:
                    gradient(1.5, 3)
                assert f"edited_by_the_user.py:{line}" in str(info.value)
            assert _hits(gradient) == 0
    x = np.linspace(-1.0, 1.0, 3)
    text = "def half(x):\n    return x * 0.5\n\n\ndef both(x):\n    return np.sum(half(x) * half(x * x))\n"
    first = astgrad.grad(_from_source(text, "both"), backend="numba")
    want = first(x)
    again = astgrad.grad(_from_source(text, "both"), backend="numba")
    np.testing.assert_array_equal(again(x), want)
    # without LLVM's optimisations (as the tests run) the call of a callee compiled apart holds its address,
    # and Numba does not cache such code
    assert _hits(first) == 0 and _hits(again) == (numba.config.OPT != 0)
    np.testing.assert_allclose(want, 3 * x ** 2 / 4, rtol=1e-12)


def test_no_cache_when_it_is_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTGRAD_NUMBA_CACHE", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    x = np.linspace(-1.0, 1.0, 4)
    np.testing.assert_allclose(astgrad.grad(scaled, backend="numba")(x), 2.0 * np.cos(x), rtol=1e-12)
    assert not list(tmp_path.rglob("*.py"))


def test_a_gradient_whose_unbroadcast_may_run_numpy_in_object_mode_is_read_from_disk(tmp_path):
    """``unbroadcast`` at a value's rank calls numpy in object mode where the shapes differ; with LLVM's
    optimisations on (Numba's default, not the tests') the compiled code holds no Python object's address,
    so the cache keeps it.  In a new process with ``NUMBA_OPT=3``: the second gradient is read from disk and
    both give numpy's numbers, where the shapes broadcast and then (the same types) where they are equal."""
    script = textwrap.dedent('''
        import linecache, numpy as np, astgrad
        text = "def f(w, x):\\n    return np.sum(np.sin(w * x))\\n"
        def made():
            linecache.cache["edited_by_the_user.py"] = (len(text), None, text.splitlines(True), "edited_by_the_user.py")
            namespace = {"np": np}
            exec(compile(text, "edited_by_the_user.py", "exec"), namespace)
            return namespace["f"]
        w, x = np.linspace(0.1, 0.9, 3).reshape(3, 1), np.linspace(-1.0, 1.0, 12).reshape(3, 4)
        for a in (w, np.linspace(0.1, 0.9, 12).reshape(3, 4)):
            first = astgrad.grad(made(), backend="numba")
            want = first(a, x)
            again = astgrad.grad(made(), backend="numba")
            got = again(a, x)
            hits = [sum(g._generated.function.compiled.stats.cache_hits.values()) for g in (first, again)]
            expected = np.sum(np.cos(a * x) * x, axis=1, keepdims=True) if a.shape != x.shape else np.cos(a * x) * x
            np.testing.assert_allclose(got, expected, rtol=1e-12)
            np.testing.assert_array_equal(got, want)
            print(hits)
    ''')
    env = dict(__import__("os").environ, NUMBA_OPT="3", ASTGRAD_NUMBA_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[0,", "1]", "[1,", "1]"]  # the same types the second time: all from disk
