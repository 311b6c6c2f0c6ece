"""backend="numba": each of astgrad's helpers compiled once per kind of arguments, whichever function calls it.

The entry is compiled with a wrapper for Python's call, its callees without
one; Numba keyed a helper's implementation by all of its caller's flags, so a
helper both call was compiled twice into the same code.  The first test runs
in a new process (a process compiles each helper once: only a new one shows
what a first call compiles) and counts the compiles of astgrad's helpers by
kind of arguments; it finds four twice without ``share_impls``.
"""

import json
import subprocess
import sys
import textwrap

import pytest

numba = pytest.importorskip("numba")

from astgrad.backends.numba import shared_impls  # noqa: E402

_PROGRAM = '''
import numpy as np


def energy(pos, vel, mass):
    return 0.5 * np.sum(mass * vel ** 2) + 0.5 * np.sum(pos ** 2)


def drift(vel0, pos0, mass, dt, steps):
    pos, vel = pos0.copy(), vel0.copy()
    e0 = energy(pos, vel, mass)
    for _ in range(steps):
        vel += -0.5 * dt * pos / mass
        pos += dt * vel
    return (energy(pos, vel, mass) - e0) ** 2
'''

_SCRIPT = textwrap.dedent('''
    import collections, json, sys
    import numpy as np, astgrad
    from numba.core import event
    sys.path.insert(0, sys.argv[1])
    from program import drift
    args = (np.array([0.1, -0.2, 0.3]), np.array([1.0, 0.5, -0.5]), np.array([1.0, 2.0, 3.0]), 0.1, 4)
    compiled = collections.Counter()
    with event.install_recorder("numba:compile") as recorded:
        got = astgrad.grad(drift, wrt=(0, 1, 2), backend="numba")(*args)
    for _, e in recorded.buffer:
        function = e.data["dispatcher"].py_func
        if e.is_start and str(function.__module__).startswith("astgrad."):
            compiled[function.__qualname__ + " " + str(e.data["args"])] += 1
    want = astgrad.grad(drift, wrt=(0, 1, 2))(*args)
    print(json.dumps({"compiled": compiled, "differs": max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))}))
''')


def test_a_helper_the_entry_and_a_callee_both_call_compiles_once_per_kind_of_arguments(tmp_path):
    (tmp_path / "program.py").write_text(_PROGRAM)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "ASTGRAD_NUMBA_CACHE": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["differs"] < 1e-12
    assert len(report["compiled"]) >= 8  # zeros, shapes, sums, unbroadcasts...: compiled here, not before
    assert {kind: n for kind, n in report["compiled"].items() if n > 1} == {}


def test_the_flags_a_compile_inherits_are_read_from_numbas_own_target():
    assert shared_impls.inherited_flags() == ("error_model", "fastmath", "forceinline", "nrt")
    source = 'flags.inherit_if_not_set("nrt", default=True)\n    flags.inherit_if_not_set("fastmath")\n'
    assert shared_impls.inherited_in(source) == ("fastmath", "nrt")
    # a flag not known to be inherited only, another way of inheriting, or none found: Numba's keys are kept
    assert shared_impls.inherited_in(source + 'flags.inherit_if_not_set("boundscheck")') is None
    assert shared_impls.inherited_in(source + "flags.inherit_from(caller)") is None
    assert shared_impls.inherited_in("pass") is None
