"""The one visitor over the normal form: every pass reaches nested statements the same way.

A pass that walked a While's cond where it should not (or missed it where
it should) would read or skip statements: activity or saves computed from
the wrong statements.  These pin what each helper visits, kind by kind.
"""

import pytest

from astgrad.transform.ir import compat
from astgrad.transform.ir.nodes import (Break, For, If, Op, Raw, While, assigned, blocks, branches, control_names,
                                        dispatch, own_reads, walk_statements)


def _op(target, *reads):
    args = [compat.name(r) for r in reads]
    expr = args[0] if len(args) == 1 else compat.tuple_(args)
    return Op([target], "copy", expr, 1, "", args=args)


def _program():
    cond = [_op("c", "x")]
    loop_body = [_op("y", "x"), Break()]
    inner = For("i", compat.name("n"), loop_body, 3, "")
    return [_op("a", "x"), If("a", [inner], [_op("z", "a")], 2, ""), While(cond, "c", [_op("w", "y")], 4, ""),
            Raw(compat.expr_stmt(compat.name("q")))]


def test_blocks_and_branches_differ_only_by_a_while_cond():
    body = _program()
    while_ = body[2]
    assert blocks(while_) == [while_.cond, while_.body]
    assert branches(while_) == [while_.body]
    assert blocks(body[1]) == branches(body[1]) == [body[1].body, body[1].orelse]
    assert blocks(body[0]) == blocks(Break()) == blocks(body[3]) == []


def test_walks_reach_every_statement_once_and_skip_the_cond_when_asked():
    body = _program()
    everything = list(walk_statements(body))
    assert len(everything) == 10 and len({id(s) for s in everything}) == 10
    without_cond = list(walk_statements(body, branches))
    assert body[2].cond[0] not in without_cond and len(without_cond) == 9


def test_names_bound_and_read_by_each_kind():
    body = _program()
    assert assigned(body) == {"a", "z", "i", "y", "c", "w"}
    assert control_names(body[1]) == ["a"] and control_names(body[2]) == ["c"]
    assert control_names(body[1].body[0]) == ["i"]
    assert own_reads(body[1].body[0]) == ["n"] and own_reads(body[3]) == ["q"] and own_reads(Break()) == []


class _Kinds:
    def __getattr__(self, name):
        if name.startswith("seen_"):
            return lambda s, extra: (name, extra)
        raise AttributeError(name)


@pytest.mark.parametrize("statement, kind", [(_op("a", "x"), "op"), (Break(), "break"),
                                             (If("t", [], [], 1, ""), "if"), (Raw(None), "raw")])
def test_dispatch_calls_the_method_named_for_the_kind(statement, kind):
    assert dispatch(_Kinds(), "seen", statement, 7) == (f"seen_{kind}", 7)
