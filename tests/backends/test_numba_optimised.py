"""backend="numba" at Numba's own optimisation level, the one users get.

The other Numba tests compile with ``NUMBA_OPT=0`` (tests/conftest.py says why); LLVM's
passes must not change a number, so here a fresh process compiles with the environment
variable unset: a loop over numbers (where the passes do the most) and a small layer
with ``@`` and a broadcast bias, against the numpy backend and central
differences. ``--runslow`` runs every Numba test at that level.
"""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("numba")

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCRIPT = """
import numba, numpy as np
import astgrad

assert numba.config.OPT == 3, numba.config.OPT

def scalar_loop(x, steps):
    for _ in range(steps):
        x = x * np.cos(x) + 0.5 * x
    return x

def network(W, b, X):
    hidden = np.tanh(X @ W + b)
    return np.sum(hidden * hidden)

def central(f, x, h=1e-6):
    x = np.array(x, dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(up) - f(down)) / (2 * h)
    return out

got = astgrad.grad(scalar_loop, backend="numba")(0.7, 20)
assert abs(got - astgrad.grad(scalar_loop)(0.7, 20)) < 1e-12 * abs(got), got
assert abs(got - central(lambda v: scalar_loop(float(v), 20), 0.7)) < 1e-6 * max(1.0, abs(got)), got

rng = np.random.default_rng(1)
W, b, X = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((5, 4))
got = astgrad.grad(network, wrt=(0, 1), backend="numba")(W, b, X)
numpy = astgrad.grad(network, wrt=(0, 1))(W, b, X)
for a, e in zip(got, numpy):
    np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)
np.testing.assert_allclose(got[0], central(lambda w: network(w, b, X), W), rtol=1e-6, atol=1e-8)
np.testing.assert_allclose(got[1], central(lambda v: network(W, v, X), b), rtol=1e-6, atol=1e-8)
print("ok")
"""


def _without_numba_opt():
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_OPT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def test_the_other_numba_tests_compile_without_llvms_passes():
    import numba
    assert numba.config.OPT == int(os.environ["NUMBA_OPT"])


def test_at_numbas_default_level_gradients_are_the_numpy_backends(tmp_path):
    script = tmp_path / "optimised.py"  # a file: astgrad reads the functions' source
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                            env=_without_numba_opt(), timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


@pytest.mark.slow
def test_every_numba_test_at_numbas_default_level():
    here = pathlib.Path(__file__).resolve().parent
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here)],
                            capture_output=True, text=True, cwd=ROOT, env={**_without_numba_opt(), "NUMBA_OPT": "3"},
                            timeout=3600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
