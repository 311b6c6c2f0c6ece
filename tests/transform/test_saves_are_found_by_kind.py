"""The passes after reversal find pushes, pops, shape stand-ins and releases by their kind.

A statement that merely looks like a save (``_stack.append(x)`` written by
anything but the sweeps) is not one: matching it by its text could pair a
pop with the wrong push and hand a rule the wrong value, a wrong number
without an error.  Each node the sweeps and the memory passes make carries
its kind, through copies of the tree too.
"""

import numpy as np

import astgrad
from astgrad.transform import adjoint_ir, compat
from astgrad.transform.cleanup import drop_unread_saves, unstack
from astgrad.transform.compat import gast
from astgrad.transform.emit import function_def

from _numeric import assert_grad


def _fn(body):
    args = compat.make("arguments", args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                       kwarg=None, defaults=[])
    return function_def("f", args, body)


def test_each_kind_is_told_apart_and_survives_a_copy_of_the_tree():
    push = adjoint_ir.push("_stack", compat.name("t1"))
    restore = compat.assign("t1", adjoint_ir.pop("_stack"))
    kept = adjoint_ir.shape_of("only_shape", compat.name("t2"))
    release = adjoint_ir.release(["t3", "t4"])
    for node in (push, restore, kept, release):
        copy = compat.clone(node)
        assert adjoint_ir.pushed(copy) is not None or adjoint_ir.popped_into(copy) is not None \
            or adjoint_ir.kind(copy) in (adjoint_ir.SHAPE_OF, adjoint_ir.RELEASE)
    assert adjoint_ir.pushed(compat.clone(push)).id == "t1"
    assert adjoint_ir.popped_into(compat.clone(restore)) == "t1"
    assert adjoint_ir.shape_kept(compat.clone(kept)).id == "t2"
    assert adjoint_ir.kind(compat.clone(release)) == adjoint_ir.RELEASE
    assert [t.id for t in release.targets] == ["t3", "t4"]


def test_a_statement_that_only_looks_like_a_push_is_not_one():
    lookalike = compat.expr_stmt(compat.call(compat.attr(compat.name("_stack"), "append"), [compat.name("t1")]))
    pop_lookalike = compat.assign("t1", compat.call(compat.attr(compat.name("_stack"), "pop")))
    assert adjoint_ir.pushed(lookalike) is None
    assert adjoint_ir.popped_into(pop_lookalike) is None
    body = [compat.assign("t1", compat.const(1.0)), lookalike, pop_lookalike, compat.ret(compat.name("t1"))]
    fn_def = _fn(body)
    assert unstack(fn_def).body == body  # no pair of a push and a pop: left as it is
    assert drop_unread_saves(fn_def, [pop_lookalike]).body == body


def test_a_push_and_its_pop_at_the_top_level_become_a_read_of_the_name():
    push = adjoint_ir.push("_stack", compat.name("t1"))
    restore = compat.assign("u", adjoint_ir.pop("_stack"))
    body = [compat.assign("t1", compat.const(1.0)), push, restore, compat.ret(compat.name("u"))]
    out = unstack(_fn(body)).body
    assert len(out) == 3
    assert isinstance(out[1].value, gast.Name) and out[1].value.id == "t1"


def test_a_save_nothing_reads_goes_with_its_pop():
    push = adjoint_ir.push("_stack", adjoint_ir.shape_of("only_shape", compat.name("t4")))
    restore = compat.assign("t4", adjoint_ir.pop("_stack"))
    keep = compat.ret(compat.const(0.0))
    out = drop_unread_saves(_fn([push, restore, keep]), [restore, keep]).body
    assert out == [keep]


def loop(x, n):
    for _ in range(n):
        x = np.sin(x) * x + 0.1 * x
    return np.sum(x * x)


def test_a_loop_whose_saves_stay_on_the_stack_gives_the_derivative():
    g = astgrad.grad(loop)
    x = np.array([0.3, -0.2, 0.5])
    for n in (0, 1, 4):
        assert_grad(g, loop, x, n)
