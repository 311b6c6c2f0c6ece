"""Every entry of the table given the zero the generated code writes where it has no gradient yet.

Where control flow joins a path without a gradient for a name, the reverse
sweep writes the number ``0.0`` (the shape is not known there) and a rule
that cannot take it is skipped (``if is_zero(dy): ...``); a rule skipped
that way leaves its inputs' adjoints at ``0.0`` too, and a later
contribution must not make the sweep forget that the other path left them
so (a Kalman filter's gain at its last step, whose value reaches nothing,
crashed the matmul rule).  The forward sweep writes ``zero_tangent(u)``
where a path without a tangent joins.

Each sample case with one floating output (``samples.py``) runs in a
program written for it (a list of arrays, ``np.concatenate([a, b])``, as
one parameter per item, the call building the list), in both modes, where that zero reaches the entry
on the last of two steps; the gradient and the tangent are compared with
central differences of the program.  Each case with several outputs (a
tuple or list: ``np.linalg.eigh``, ``np.split``, ``scipy.linalg.lu``,
``np.modf``) runs unpacked into names, every floating output used or only
the first (the others' adjoints ``None``): on the last step the pair of
adjoints is the join's ``0.0``s, which a rule reads as no gradient.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

import astgrad
from _numeric import directional, numeric_grad

from .samples import CASES, case_id
from .test_table import draw

_counter = itertools.count()

# reverse: on the last step, p and q get no gradient (the 0.0 a join wrote), so q's rule and then p's
# (each skipped for 0.0; p's adds to y's adjoint through a temporary) leave y's adjoint at 0.0
_REVERSE = """
import numpy as np


def program({params}, last):
    total = 0.0
    for k in range(2):
        y = ENTRY({call})
        p = np.dot(y, 1.0)
        q = np.reshape(y, np.shape(y))
        if k < last:
            total = total + np.sum(p * W) + np.sum(q * W * 2.0)
    return total
"""

# forward: on the last step, the differentiated arguments reach the entry through a join with a constant
_FORWARD = """
import numpy as np


def program({params}, last):
    total = 0.0
    for k in range(2):
        if k < last:
{moved}
        else:
{fixed}
        y = ENTRY({call})
        total = total + np.sum(y * W)
    return total
"""


def _single_float_output(case):
    if not case.generated:
        return False
    args, _ = draw(case)
    if any(isinstance(a, list) and not all(isinstance(item, (np.ndarray, float)) for item in a) for a in args):
        return False  # a list of lists: no parameter per item to differentiate
    out = case.function(*args, **case.kwargs)
    return not isinstance(out, (tuple, list)) and np.asarray(out).dtype.kind == "f"


SINGLE = [c for c in CASES if _single_float_output(c)]


def _flattened(args, diff):
    """A list of arrays (``np.concatenate([a, b])``) as one parameter per item, the call building the list."""
    flat, flat_diff, groups = [], [], []
    for a, d in zip(args, diff):
        items = a if isinstance(a, list) else [a]
        groups.append((len(flat), len(items), isinstance(a, list)))
        flat += items
        flat_diff += [d] * len(items)
    return flat, flat_diff, groups


def _program(case, template, tmp_path):
    args, diff = draw(case)
    args, diff, groups = _flattened(args, diff)
    params = [f"a{i}" for i in range(len(args))]
    used = [f"u{i}" if d else p for i, (p, d) in enumerate(zip(params, diff))] if template is _FORWARD else params
    grouped = [f"[{', '.join(used[start:start + n])}]" if listed else used[start] for start, n, listed in groups]
    call = ", ".join(grouped + [f"{k}=K_{k}" for k in case.kwargs])
    moved = "\n".join(f"            u{i} = a{i} * 1.0" for i, d in enumerate(diff) if d)
    fixed = "\n".join(f"            u{i} = C{i}" for i, d in enumerate(diff) if d)
    text = template.format(params=", ".join(params), call=call, moved=moved, fixed=fixed)
    name = f"_placeholder_zero_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ENTRY = getattr(case.function, "generated_call", case.function)  # a tape-only wrapper: generated code calls fn
    for k, v in case.kwargs.items():
        setattr(module, f"K_{k}", v)
    for i, (a, d) in enumerate(zip(args, diff)):
        if d:
            setattr(module, f"C{i}", a)
    given = [list(args[start:start + n]) if listed else args[start] for start, n, listed in groups]
    module.W = np.random.default_rng(3).uniform(0.5, 1.5, np.shape(case.function(*given, **case.kwargs)))
    wrt = tuple(i for i, d in enumerate(diff) if d)
    return module.program, [*args, 1], wrt


#: entries whose reverse rule still fails (an error, never a number) under the placeholder zero: to fix
KNOWN_TO_FAIL: dict = {}  # case id -> (why, the error it raises): none today


def _marked(cases):
    """The known failures marked: strict, and only for the error each raises (a wrong number still fails)."""
    return [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_TO_FAIL[case_id(c)][0], strict=True,
                                                    raises=KNOWN_TO_FAIL[case_id(c)][1]))
            if case_id(c) in KNOWN_TO_FAIL else c for c in cases]


@pytest.mark.sweep(10)
@pytest.mark.parametrize("case", _marked(SINGLE), ids=case_id)
def test_reverse_rule_under_a_placeholder_zero_adjoint(case, tmp_path):
    program, args, wrt = _program(case, _REVERSE, tmp_path)
    got = astgrad.grad(program, wrt=wrt)(*args)  # a tuple wrt: a tuple of gradients
    for g, i in zip(got, wrt):
        np.testing.assert_allclose(g, numeric_grad(program, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.sweep(10)
@pytest.mark.parametrize("case", SINGLE, ids=case_id)
def test_forward_rule_under_a_joined_zero_tangent(case, tmp_path):
    program, args, wrt = _program(case, _FORWARD, tmp_path)
    rng = np.random.default_rng(4)
    us = tuple(rng.uniform(-1, 1, np.shape(args[i])) if isinstance(args[i], np.ndarray) else float(rng.uniform(-1, 1))
               for i in wrt)
    _, tangent = astgrad.jvp(program, wrt=wrt)(*args, us)

    def along(s):
        moved = list(args)
        for i, u in zip(wrt, us):
            moved[i] = args[i] + s * u
        return program(*moved)
    np.testing.assert_allclose(tangent, directional(along, 0.0, 1.0), rtol=1e-5, atol=1e-6)


# several outputs: unpacked, the first through a rule of its own; on the last step every adjoint is the join's 0.0
_REVERSE_ITEMS = """
import numpy as np


def program({params}, last):
    total = 0.0
    for k in range(2):
        {targets} = ENTRY({call})
        p = np.reshape({first}, np.shape({first}))
        if k < last:
            total = total + np.sum(p * W[0]){more}
    return total
"""

_FORWARD_ITEMS = """
import numpy as np


def program({params}, last):
    total = 0.0
    for k in range(2):
        if k < last:
{moved}
        else:
{fixed}
        r = ENTRY({call})
        total = total{uses}
    return total
"""


def _several_outputs(case):
    if not case.generated:
        return False
    args, _ = draw(case)
    if any(isinstance(a, list) for a in args):
        return False
    out = case.function(*args, **case.kwargs)
    return isinstance(out, (tuple, list)) and any(np.asarray(o).dtype.kind == "f" for o in out)


SEVERAL = [c for c in CASES if _several_outputs(c)]


def _items_program(case, template, used, tmp_path):
    args, diff = draw(case)
    out = case.function(*args, **case.kwargs)
    floats = [i for i, o in enumerate(out) if np.asarray(o).dtype.kind == "f"]
    params = [f"a{i}" for i in range(len(args))]
    passed = [f"u{i}" if d else p for i, (p, d) in enumerate(zip(params, diff))] if template is _FORWARD_ITEMS \
        else params
    text = template.format(
        params=", ".join(params), call=", ".join(passed + [f"{k}=K_{k}" for k in case.kwargs]),
        targets=", ".join(f"o{i}" for i in range(len(out))) + ("," if len(out) == 1 else ""), first=f"o{floats[0]}",
        more="".join(f" + np.sum(o{i} * W[{j}])" for j, i in enumerate(floats) if j > 0 and used == "all"),
        uses="".join(f" + np.sum(r[{i}] * W[{j}])" for j, i in enumerate(floats)),
        moved="\n".join(f"            u{i} = a{i} * 1.0" for i, d in enumerate(diff) if d),
        fixed="\n".join(f"            u{i} = C{i}" for i, d in enumerate(diff) if d))
    name = f"_placeholder_zero_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ENTRY = getattr(case.function, "generated_call", case.function)
    for k, v in case.kwargs.items():
        setattr(module, f"K_{k}", v)
    for i, (a, d) in enumerate(zip(args, diff)):
        if d:
            setattr(module, f"C{i}", a)
    rng = np.random.default_rng(3)
    module.W = [rng.uniform(0.5, 1.5, np.shape(out[i])) for i in floats]
    return module.program, [*args, 1], tuple(i for i, d in enumerate(diff) if d)


@pytest.mark.sweep(10)
@pytest.mark.parametrize("used", ["all", "first"])
@pytest.mark.parametrize("case", SEVERAL, ids=case_id)
def test_reverse_rule_of_several_outputs_under_placeholder_zero_adjoints(case, used, tmp_path):
    program, args, wrt = _items_program(case, _REVERSE_ITEMS, used, tmp_path)
    got = astgrad.grad(program, wrt=wrt)(*args)
    for g, i in zip(got, wrt):
        np.testing.assert_allclose(g, numeric_grad(program, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.sweep(10)
@pytest.mark.parametrize("case", SEVERAL, ids=case_id)
def test_forward_rule_of_several_outputs_under_a_joined_zero_tangent(case, tmp_path):
    program, args, wrt = _items_program(case, _FORWARD_ITEMS, "all", tmp_path)
    rng = np.random.default_rng(4)
    us = tuple(rng.uniform(-1, 1, np.shape(args[i])) if isinstance(args[i], np.ndarray) else float(rng.uniform(-1, 1))
               for i in wrt)
    _, tangent = astgrad.jvp(program, wrt=wrt)(*args, us)

    def along(s):
        moved = list(args)
        for i, u in zip(wrt, us):
            moved[i] = args[i] + s * u
        return program(*moved)
    np.testing.assert_allclose(tangent, directional(along, 0.0, 1.0), rtol=1e-5, atol=1e-6)
