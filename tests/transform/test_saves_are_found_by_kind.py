"""The passes after reversal find pushes, pops, shape stand-ins and releases by their kind.

A statement that merely looks like a save (``_stack.append(x)`` written by
anything but the sweeps) is not one: matching it by its text could pair a
pop with the wrong push and hand a rule the wrong value, a wrong number
without an error.  Each node the sweeps and the memory passes make carries
its kind, through copies of the tree too.
"""

import numpy as np

import astgrad
from astgrad.transform.ir import tagged, compat
from astgrad.transform.passes.cleanup import drop_unread_saves, unstack
from astgrad.transform.ir.compat import gast
from astgrad.transform.ir.trees import function_def

from _numeric import assert_grad


def _fn(body):
    args = compat.make("arguments", args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                       kwarg=None, defaults=[])
    return function_def("f", args, body)


def test_each_kind_is_told_apart_and_survives_a_copy_of_the_tree():
    push = tagged.push("_stack", compat.name("t1"))
    restore = compat.assign("t1", tagged.pop("_stack"))
    kept = tagged.shape_of("only_shape", compat.name("t2"))
    release = tagged.release(["t3", "t4"])
    for node in (push, restore, kept, release):
        copy = compat.clone(node)
        assert tagged.pushed(copy) is not None or tagged.popped_into(copy) is not None \
            or tagged.kind(copy) in (tagged.SHAPE_OF, tagged.RELEASE)
    assert tagged.pushed(compat.clone(push)).id == "t1"
    assert tagged.popped_into(compat.clone(restore)) == "t1"
    assert tagged.shape_kept(compat.clone(kept)).id == "t2"
    assert tagged.kind(compat.clone(release)) == tagged.RELEASE
    assert [t.id for t in release.targets] == ["t3", "t4"]


def test_a_statement_that_only_looks_like_a_push_is_not_one():
    lookalike = compat.expr_stmt(compat.call(compat.attr(compat.name("_stack"), "append"), [compat.name("t1")]))
    pop_lookalike = compat.assign("t1", compat.call(compat.attr(compat.name("_stack"), "pop")))
    assert tagged.pushed(lookalike) is None
    assert tagged.popped_into(pop_lookalike) is None
    body = [compat.assign("t1", compat.const(1.0)), lookalike, pop_lookalike, compat.ret(compat.name("t1"))]
    fn_def = _fn(body)
    assert unstack(fn_def).body == body  # no pair of a push and a pop: left as it is
    assert drop_unread_saves(fn_def, [pop_lookalike]).body == body


def test_a_push_and_its_pop_at_the_top_level_become_a_read_of_the_name():
    push = tagged.push("_stack", compat.name("t1"))
    restore = compat.assign("u", tagged.pop("_stack"))
    body = [compat.assign("t1", compat.const(1.0)), push, restore, compat.ret(compat.name("u"))]
    out = unstack(_fn(body)).body
    assert len(out) == 3
    assert isinstance(out[1].value, gast.Name) and out[1].value.id == "t1"


def test_a_save_nothing_reads_goes_with_its_pop():
    push = tagged.push("_stack", tagged.shape_of("only_shape", compat.name("t4")))
    restore = compat.assign("t4", tagged.pop("_stack"))
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
