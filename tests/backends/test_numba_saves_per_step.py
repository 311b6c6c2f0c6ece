"""backend="numba": the values a loop saves once a step travel as one tuple a step (steps.saves_per_step).

Each saved variable had its own list; merged, the k-th tuple popped holds
what the k-th pushes from the end saved, which holds only where every list
is pushed once in each step and popped once in each reverse step.  Each
case is compared with the numpy backend and central differences, and the
text says whether the lists were merged.
"""

import numpy as np
import pytest

import _numeric
import astgrad

pytest.importorskip("numba")


def branching_steps(x, n):
    u = x * 1.0
    s = 0.0
    for _ in range(n):
        y = np.sin(u) * u
        if np.sum(y) > 0:
            u = y + 1.0
        else:
            u = y * 0.5
        s = s + np.sum(u * u)
    return s


def _check(fn, x, n):
    gradient = astgrad.grad(fn, backend="numba")
    got = gradient(x, n)
    np.testing.assert_allclose(got, astgrad.grad(fn)(x, n), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got, _numeric.gradient(lambda v: fn(v, n), x), rtol=1e-6, atol=1e-8)
    return gradient.source


def test_a_steps_saves_and_its_branch_records_are_one_tuple_a_step():
    source = _check(branching_steps, np.array([0.3, -0.9, 0.5]), 5)
    assert "_pushed_" in source and "_popped_" in source
    loop = source[source.index("for _ in range(n):"):]
    loop = loop[:loop.index("for _ in range(n - 1, -1, -1)")]
    assert loop.count(".append((") == 1  # the branch record and the sine, one tuple a step
    assert loop.count("_stack_u.append(u)") == 2  # pushed in a branch (once a step, but not at the step's top)


STEPS = """
def f(x, n):
    _stack_a = []
    _stack_b = []
    _stack_c = []
    for k in range(n):
        _stack_a.append(x)
        x = x * 1.5 + k
        _stack_b.append(x)
        if x > LIMIT:
            _stack_c.append(x)
            BREAK
    out = []
    for k in range(n - 1, -1, -1):
        x = _stack_b.pop() - _stack_a.pop()
        out.append(x)
    return out
"""


def _steps(text):
    """The text after saves_per_step, as Python (which runs it without Numba)."""
    from astgrad.backends.numba.steps import saves_per_step
    from astgrad.transform.ir import compat
    tree = compat.parse(text)
    saves_per_step(tree.body)
    return compat.to_source(tree)


def test_merged_lists_give_the_values_of_the_lists_apart():
    """Run as Python: the k-th reverse step reads what the k-th step from the end saved, as before."""
    text = STEPS.replace("LIMIT", "1e9").replace("BREAK", "pass")
    merged = _steps(text)
    before: dict = {}
    after: dict = {}
    exec(text, before)
    exec(merged, after)
    want, got = before["f"](0.5, 6), after["f"](0.5, 6)
    assert "_stack_a_b.append((" in merged and "_stack_c.append(x)" in merged  # c is pushed in a branch
    assert got == want and len(got) == 6


def test_a_loop_that_may_stop_early_keeps_a_list_per_variable():
    """A break skips the pushes after it in its last step: the lists may differ in length, and stay apart."""
    merged = _steps(STEPS.replace("LIMIT", "3.0").replace("BREAK", "break"))
    assert "_pushed_" not in merged and "_stack_a.append(x)" in merged
