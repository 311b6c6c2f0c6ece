"""Remove jumps: ``return``, ``break`` and ``continue`` become assignments.

After this pass a function body has no ``continue``, no ``return`` except
the last statement, and ``break`` only as ``if flag: break`` at the very end
of a loop body.  The reverse pass can then treat every block as straight
code whose branches and trip counts are recorded on the stack.

Returns in tail position of an ``if`` (outside loops) move the rest of the
block into the other branch, so ``if c: return a`` / ``return b`` becomes an
if/else that assigns ``result`` in each branch, with no flag.  Jumps that
cannot be handled that way set flags (``_returned``, ``_break``, ``_skip``)
and the statements after them are guarded.
"""

from __future__ import annotations

from ..ir import compat
from ..ir.compat import gast


def _copy_loc(new, old):
    new.lineno = getattr(old, "lineno", None)
    new.col_offset = getattr(old, "col_offset", None)
    return new


def _flag_set(flag, value, old):
    return _copy_loc(compat.assign(flag, compat.const(value)), old)


def _returns(stmts) -> bool:
    """Every path through ``stmts`` ends in a return."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    if isinstance(last, gast.If):
        return _returns(last.body) and _returns(last.orelse)
    return False


def _contains(stmts, kinds, into_loops: bool) -> bool:
    for s in stmts:
        if isinstance(s, kinds):
            return True
        if isinstance(s, (gast.For, gast.While)):
            if into_loops and _contains(s.body, kinds, into_loops):
                return True
        elif isinstance(s, gast.If):
            if _contains(s.body, kinds, into_loops) or _contains(s.orelse, kinds, into_loops):
                return True
        elif isinstance(s, gast.With):
            if _contains(s.body, kinds, into_loops):
                return True
    return False


class _Loop:
    def __init__(self, brk, skip):
        self.brk = brk
        self.skip = skip


class Structurer:
    """Rewrites one function body; ``names`` hands out the flag names."""

    def __init__(self, names):
        self.names = names
        self.result = None
        self.returned: str | None = None

    def function_body(self, body):
        """The new body and the name of the variable holding the result."""
        body = [s for s in body if not _is_docstring(s)]
        returns = [n for s in body for n in gast.walk(s) if isinstance(n, gast.Return)]
        if len(returns) == 1 and body and body[-1] is returns[0]:
            return self.block(body[:-1], None) + [body[-1]], None  # one return, at the end
        self.result = self.names.fresh("result")
        if _contains(body, (gast.Return,), into_loops=False) is False and not returns:
            body = body + [compat.make("Return", value=None)]
        if any(_in_loop(body, r) for r in returns) or not self._tail_only(body):
            self.returned = self.names.fresh("_returned")
        new = self.block(body, None)
        prefix = []
        if self.returned:
            prefix.append(compat.assign(self.returned, compat.const(False)))
        if not _returns(body) or self.returned:
            prefix.append(compat.assign(self.result, compat.const(None)))
        return prefix + new, self.result

    def _tail_only(self, body) -> bool:
        """All returns can be handled by moving code into else branches."""
        for i, s in enumerate(body):
            if isinstance(s, gast.If) and _contains([s], (gast.Return,), into_loops=False):
                if not (_returns(s.body) or _returns(s.orelse)):
                    return False
                if not self._tail_only(s.body) or not self._tail_only(s.orelse):
                    return False
        return True

    def block(self, stmts, loop):
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else compat.const(None)
                out.append(_copy_loc(compat.assign(self.result, value), s))
                if loop is not None:
                    out.append(_flag_set(self.returned, True, s))
                    out.append(_flag_set(loop.brk, True, s))
                    out.append(_flag_set(loop.skip, True, s))
                elif self.returned:
                    out.append(_flag_set(self.returned, True, s))
                return out
            if isinstance(s, gast.Break):
                out += [_flag_set(loop.brk, True, s), _flag_set(loop.skip, True, s)]
                return out
            if isinstance(s, gast.Continue):
                out.append(_flag_set(loop.skip, True, s))
                return out
            if isinstance(s, gast.If):
                if loop is None and not self.returned and (_returns(s.body) or _returns(s.orelse)):
                    body = s.body if _returns(s.body) else s.body + rest
                    orelse = s.orelse if _returns(s.orelse) else s.orelse + rest
                    out.append(_copy_loc(compat.make("If", test=s.test, body=self.block(body, loop),
                                                     orelse=self.block(orelse, loop)), s))
                    return out
                new = _copy_loc(compat.make("If", test=s.test, body=self.block(s.body, loop),
                                            orelse=self.block(s.orelse, loop)), s)
                out.append(new)
                if rest and self._may_jump(s, loop):
                    out.append(self._guard(rest, loop, s))
                    return out
                continue
            if isinstance(s, (gast.For, gast.While)):
                out += self.loop(s)
                if rest and _contains(s.body, (gast.Return,), into_loops=True):
                    if loop is not None:
                        out.append(_copy_loc(compat.if_stmt(compat.name(self._returned_flag()), [
                            _flag_set(loop.brk, True, s), _flag_set(loop.skip, True, s)]), s))
                    out.append(self._guard(rest, loop, s))
                    return out
                if loop is not None and not rest and _contains(s.body, (gast.Return,), into_loops=True):
                    out.append(_copy_loc(compat.if_stmt(compat.name(self._returned_flag()), [
                        _flag_set(loop.brk, True, s), _flag_set(loop.skip, True, s)]), s))
                continue
            if isinstance(s, gast.With):
                new = compat.clone(s)
                new.body = self.block(s.body, loop)
                out.append(new)
                if rest and self._may_jump(s, loop):
                    out.append(self._guard(rest, loop, s))
                    return out
                continue
            out.append(s)
        return out

    def _may_jump(self, stmt, loop) -> bool:
        if _contains([stmt], (gast.Return,), into_loops=True) and (loop is not None or self.returned):
            return True
        return loop is not None and _contains([stmt], (gast.Break, gast.Continue), into_loops=False)

    def _returned_flag(self) -> str:
        """The flag a return inside a loop sets: made when the function has such a return."""
        assert self.returned is not None, "a return inside a loop without its flag"
        return self.returned

    def _guard(self, rest, loop, at):
        flag = loop.skip if loop is not None else self._returned_flag()
        test = compat.make("UnaryOp", op=gast.Not(), operand=compat.name(flag))
        return _copy_loc(compat.make("If", test=test, body=self.block(rest, loop), orelse=[]), at)

    def loop(self, s):
        jumps = _contains(s.body, (gast.Break, gast.Continue), into_loops=False)
        returns = _contains(s.body, (gast.Return,), into_loops=True)
        if not (jumps or returns):
            new = compat.clone(s)
            new.body = self.block(s.body, None)
            return [new]
        info = _Loop(self.names.fresh("_break"), self.names.fresh("_skip"))
        body = [_flag_set(info.skip, False, s)] + self.block(s.body, info)
        body.append(_copy_loc(compat.if_stmt(compat.name(info.brk), [compat.make("Break")]), s))
        new = compat.clone(s)
        new.body = body
        new.orelse = []
        return [_flag_set(info.brk, False, s), new]


def _in_loop(body, target) -> bool:
    for s in body:
        if isinstance(s, (gast.For, gast.While)):
            if any(n is target for n in gast.walk(s)):
                return True
        elif isinstance(s, (gast.If, gast.With)):
            inner = list(s.body) + list(getattr(s, "orelse", []))
            if _in_loop(inner, target):
                return True
    return False


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) and isinstance(
        stmt.value.value, str)
