"""Inline a rule's body into the adjoint, with names substituted.

A rule ``def sin(g, ans, x): return g * np.cos(x)`` applied to ``y = np.sin(x)``
becomes the expression ``dy * np.cos(x)``: parameters are replaced by the
operation's atoms, names the rule takes from its module (``np``,
``expand_reduced``) are bound in the generated module's namespace, and the
rule's own locals get fresh names.  Rules whose returns sit inside
if-statements are inlined with that control flow; rules using loops or
``*args`` are called as functions instead.  Constant parts fold away
(``y == 0`` for a literal ``y``), so ``x ** 2`` gives ``dt * (2 * x)``.
"""

from __future__ import annotations

import builtins
import inspect
import textwrap
import types
import weakref

import numpy as np

from ...rules import _extra, _support, linalg
from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from .folding import flatten, fold_stmt

_SIMPLE = (int, float, bool, str, type(None))


class Inlined:
    """Statements to run first, then one gradient expression per argument index."""

    def __init__(self, prelude, grads):
        self.prelude = prelude
        self.grads = grads


#: rule function -> its parsed definition (or None): a rule's source does not change under it
_PARSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class RuleInliner:
    def __init__(self, ns, dependencies):
        self.ns = ns
        self.dependencies = dependencies  # the rules' globals it binds: read once, checked on each call
        self._parsed = _PARSED

    def _parse(self, rule_fn):
        if rule_fn not in self._parsed:
            try:
                src = textwrap.dedent(inspect.getsource(rule_fn))
                tree = compat.parse(src)
                fd = next(n for n in tree.body if isinstance(n, gast.FunctionDef))
            except (OSError, TypeError, StopIteration, SyntaxError):
                fd = None
            self._parsed[rule_fn] = fd
        return self._parsed[rule_fn]

    def inline(self, rule, op, g, ans, names, needed, ranks=None):
        """Gradients of ``op``'s positional arguments listed in ``needed``.

        ``ranks`` (ranks.Ranks) folds ``np.ndim(a)`` of an argument whose rank it knows.
        """
        vjp = rule.vjp
        count = max(len(op.args), 1)  # one gradient per positional argument
        body = self._substituted(vjp, op, g, ans, names, ranks)
        if body is None:
            return self._call(vjp, g, ans, op, names, needed, count, rule.name)
        prelude, stmts, locals_ = body
        if stmts and isinstance(stmts[-1], gast.Return) and not _has_return(stmts[:-1]):
            after: list = []
            grads = self._split(stmts[-1].value, count, needed, names, after, rule.name, locals_)
            return Inlined(prelude + stmts[:-1] + after, grads)
        targets = {i: names.temp() for i in needed}
        converted = _returns_to_assignments(stmts, targets, count, self, names, (rule.name, locals_))
        grads = {i: compat.name(t) for i, t in targets.items()}
        return Inlined(prelude + converted, grads)

    def inline_tangent(self, jvp, op, t, ans, names, ranks=None):
        """A forward rule ``jvp(t, ans, *args)`` applied to ``op``: (statements, the tangent expression, called).

        The tangent is the rule's returned value, whole (a tuple for several
        outputs); ``called`` says the rule is called rather than inlined.
        """
        body = self._substituted(jvp, op, t, ans, names, ranks)
        if body is None:
            name = getattr(jvp, "__name__", "")
            fn = self.ns.bind(jvp, name if name.isidentifier() else getattr(op.fn, "__name__", "rule") + "_jvp")
            self.ns.pure.add(fn)
            return [], compat.call(compat.name(fn), [compat.name(t), compat.name(ans)] + compat.clone(op.args),
                                   {k: compat.clone(v) for k, v in op.kwargs.items()}), True
        prelude, stmts, _ = body
        if stmts and isinstance(stmts[-1], gast.Return) and not _has_return(stmts[:-1]):
            return prelude + stmts[:-1], stmts[-1].value, False
        target = names.temp()  # None until a return assigns it: no tangent
        return prelude + [compat.assign(target, compat.const(None))] + _returns_assigned(stmts, target), \
            compat.name(target), False

    def inline_batch(self, rule, op, bdims, args, names, ranks):
        """A batching rule ``rule(bdims, *args)`` applied to ``op``'s atoms ``args`` (core/batching.py): (statements,
        the batched result's expression), or None to call it.  ``bdims`` (a gast tuple of 0s and Nones) and
        ``ranks.rank(name)`` (of the batched value ``name`` holds) fold its branches."""
        body = self._substituted(rule, op, None, None, names, ranks, leading=[_Atom(bdims)], args=args)
        if body is None:
            return None
        prelude, stmts, _ = body
        if stmts and isinstance(stmts[-1], gast.Return) and not _has_return(stmts[:-1]):
            return prelude + stmts[:-1], stmts[-1].value
        target = names.temp()
        return prelude + _returns_assigned(stmts, target), compat.name(target)

    def _substituted(self, fn, op, g, ans, names, ranks, leading=None, args=None):
        """``fn``'s statements (ending in returns) with its parameters replaced by ``op``'s atoms, ``g``
        and ``ans``, its locals renamed and constants folded: (prelude, statements, the renamed locals);
        None when it must be called instead.  ``leading`` replaces ``(g, ans)`` (a batching rule's
        ``bdims``); ``args`` replaces ``op.args``."""
        sig = inspect.signature(fn)
        first = [_Atom(g), _Atom(ans)] if leading is None else leading
        try:
            bound = sig.bind(*first, *[_Atom(a) for a in (op.args if args is None else args)],
                             **{k: _Atom(v) for k, v in op.kwargs.items()})
        except TypeError as exc:
            raise ValueError(f"the arguments do not match the rule {fn.__name__}: {exc}") from None
        fd = self._parse(fn)
        body = None if fd is None else self._body(fd, sig, bound)
        if body is None:
            return None
        mapping, locals_ = body
        stmts = _tail_returns([s for s in fd.body if not _docstring(s)])
        if stmts is None:
            return None
        renames = {name: names.fresh(name) for name in sorted(locals_)}
        free = self._free_names(fd, fn, set(mapping) | set(locals_))
        if free is None:
            return None
        prelude = [compat.assign(renames[p], compat.clone(mapping[p])) for p in sorted(locals_ & set(mapping))]
        stmts = [_rename(s, mapping, renames, free, self._meta_helper, _rank_of(ranks, g)) for s in stmts]
        stmts = flatten([fold_stmt(s, self.ns) for s in stmts])
        return prelude, stmts, set(renames.values())

    def _body(self, fd, sig, bound):
        """Parameter substitutions and the rule's local names, or None to call it."""
        bound.apply_defaults()
        mapping = {}
        for pname, value in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                if _uses(fd, pname):
                    return None
                continue
            mapping[pname] = self._expr(value)
        stored, straight, _ = _rule_facts(fd)
        if not straight:
            return None
        return mapping, set(stored)

    def _expr(self, value):
        if isinstance(value, _Atom):
            return value.node
        if isinstance(value, _SIMPLE):
            return compat.const(value)
        if isinstance(value, tuple) and all(isinstance(v, _SIMPLE) for v in value):
            return compat.tuple_([compat.const(v) for v in value])
        return compat.name(self.ns.bind(value, "default"))

    def _free_names(self, fd, fn, bound_names):
        free = {}
        # a user's rule may read globals the user changes later; astgrad's own do not
        watch = not str(fn.__globals__.get("__name__")).startswith("astgrad.")
        for name in _rule_facts(fd)[2]:
            if name in bound_names:
                continue
            if name in fn.__globals__:
                obj = fn.__globals__[name]
                if watch:  # data too: bound here, not read at call time
                    self.dependencies.record_key(fn.__globals__, name, obj, always=True)
                if isinstance(obj, types.FunctionType):
                    obj = runtime.FASTER.get(obj, obj)
            elif hasattr(builtins, name):  # bound like any other: a user's ``len`` must not answer
                if watch:
                    self.dependencies.record_absent(fn.__globals__, name)
                obj = getattr(builtins, name)
            else:
                return None
            free[name] = self.ns.bind(obj, name)
            self.ns.pure.add(free[name])
        return free

    def _split(self, value, count, needed, names, prelude, rule_name, locals_=frozenset()):
        """One gradient expression per needed argument index, from a rule's returned ``value``.

        A tuple is one gradient per positional argument; anything else is
        the first argument's gradient (as the tape reads it).  A literal
        tuple splits here; a value that may be a tuple at run time (a call
        of a helper, a name) is split by ``runtime.gradient_tuple``.
        """
        if isinstance(value, gast.Tuple) and not any(isinstance(e, gast.Starred) for e in value.elts):
            # no entry, or None, for a differentiated argument: an error when it runs (as on the tape), never a zero
            return {i: value.elts[i] if i < len(value.elts) and not _is_none(value.elts[i]) else
                    compat.call(compat.name(self._helper(runtime.no_gradient)),
                                [compat.const(rule_name), compat.const(i)])
                    for i in needed}
        if not isinstance(value, gast.Tuple) and not self._may_be_tuple(value, locals_):
            return {0: value} if 0 in needed else {}
        temps = [names.temp() for _ in range(count)]
        call = compat.call(compat.name(self._helper(runtime.gradient_tuple)),
                           [value, compat.const(count), compat.tuple_([compat.const(i) for i in needed]),
                            compat.const(rule_name)])
        prelude.append(compat.assign(temps, call))
        return {i: compat.name(temps[i]) for i in needed if i < count}

    def _may_be_tuple(self, value, locals_, whole=True) -> bool:
        """Whether ``value`` may be a tuple when it runs: only what cannot be one is split statically.

        A rule's parameters (``g``, ``ans``, the arguments) are arrays,
        numbers or lists; arithmetic on them, comparisons and lists are not
        tuples (``+`` and ``*`` only when an operand may be one), nor is a
        numpy ufunc's single output.  Any other call (a helper of the rule,
        another rule, ``np.gradient``) may return one, and so may the rule's
        own local names (``r = helper(g); return r``) returned whole.
        """
        def may(node, whole):
            if isinstance(node, gast.Tuple):
                return not whole  # a literal tuple returned whole is split by _split
            if isinstance(node, gast.Constant):
                return isinstance(node.value, tuple)
            if isinstance(node, gast.Name):
                return node.id in locals_
            if isinstance(node, gast.BinOp):  # tuple + tuple, or a literal tuple * n
                if isinstance(node.op, gast.Add):
                    return may(node.left, False) and may(node.right, False)
                return isinstance(node.op, gast.Mult) and any(
                    isinstance(o, gast.Tuple) or isinstance(o, gast.Constant) and isinstance(o.value, tuple)
                    for o in (node.left, node.right))
            if isinstance(node, gast.IfExp):
                return may(node.body, False) or may(node.orelse, False)
            if isinstance(node, gast.BoolOp):
                return any(may(v, False) for v in node.values)
            if isinstance(node, gast.Subscript):
                return may(node.value, False)
            if isinstance(node, gast.Call):
                fn = self._resolve(node.func)
                if fn is np.where:  # np.where(c) alone gives a tuple of indices
                    return len(node.args) != 3
                return not (isinstance(fn, np.ufunc) and fn.nout == 1 or _array_helper(fn))
            return False  # attributes of arrays, unary operations, comparisons, lists, ...
        return may(value, whole)

    def _resolve(self, node):
        """The object a call's function names in the generated module (``np.cos``), or None."""
        if isinstance(node, gast.Name):
            return self.ns.globals.get(node.id)
        if isinstance(node, gast.Attribute):
            base = self._resolve(node.value)
            return getattr(base, node.attr, None) if isinstance(base, types.ModuleType) else None
        return None

    def _helper(self, fn):
        return self.ns.helper(fn)

    def _meta_helper(self, attr):
        """The runtime function reading ``attr`` (shape, size, ndim) of any value: a list or a number too.

        ``None`` gives the generated module's name for numpy.
        """
        if attr is None:
            return self.ns.bind(np, "np")
        return self._helper(_META_HELPERS[attr])

    def _call(self, vjp, g, ans, op, names, needed, count, rule_name):
        if not vjp.__name__.isidentifier():
            name = self.ns.bind(vjp, getattr(op.fn, "__name__", "rule") + "_vjp")
            self.ns.pure.add(name)
            fn = compat.name(name)
        else:
            fn = compat.name(self._helper(vjp))
        value = compat.call(fn, [compat.name(g), compat.name(ans)] + [compat.clone(a) for a in op.args],
                            {k: compat.clone(v) for k, v in op.kwargs.items()})
        prelude: list = []
        grads = self._split(value, count, needed, names, prelude, rule_name)
        return Inlined(prelude, grads)


def _array_helper(fn) -> bool:
    """An astgrad helper that returns one array (``filled``, ``unbroadcast``), never a tuple."""
    global _ARRAY_HELPERS
    if _ARRAY_HELPERS is None:
        _ARRAY_HELPERS = {runtime.filled, runtime.unbroadcast, runtime.summed, runtime.T, linalg.T, _support.unbroadcast,
                          _support.expand_reduced, _support.filled, _extra.scatter, _extra.scatter_along_axis,
                          _support.reverse_cumsum}
        _ARRAY_HELPERS |= {getattr(np, name) for name in _NUMPY_ARRAY_FUNCTIONS}
    try:
        return fn in _ARRAY_HELPERS
    except TypeError:  # unhashable
        return False


_ARRAY_HELPERS: set | None = None
#: numpy functions that return one array (never a tuple) which rules return
_NUMPY_ARRAY_FUNCTIONS = (
    "reshape", "transpose", "moveaxis", "swapaxes", "expand_dims", "squeeze", "broadcast_to", "flip", "fliplr",
    "flipud", "roll", "rot90", "concatenate", "stack", "take", "take_along_axis", "repeat", "tile", "pad",
    "sum", "cumsum", "diag", "diagonal", "triu", "tril", "zeros", "zeros_like", "ones_like", "full", "asarray",
    "real", "imag", "dot", "outer", "tensordot", "einsum")


class _Atom:
    """A placeholder standing for an atom while binding a rule's signature."""

    def __init__(self, node):
        self.node = node if not isinstance(node, str) else compat.name(node)


def _uses(fd, pname):
    return any(isinstance(n, gast.Name) and n.id == pname and isinstance(n.ctx, gast.Load)
               for s in fd.body for n in compat.walk(s))


def _docstring(s):
    return isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant)


def _is_none(node):
    return isinstance(node, gast.Constant) and node.value is None


def _has_return(stmts):
    return any(isinstance(n, gast.Return) for s in stmts for n in compat.walk(s))


def _returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, gast.Return):
        return True
    return isinstance(last, gast.If) and _returns(last.body) and _returns(last.orelse)


def _tail_returns(stmts):
    """Move code after ``if c: return`` into an else branch; None if impossible."""
    out: list = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, gast.Return):
            return out + [s]
        if isinstance(s, gast.If) and _has_return([s]):
            body = s.body if _returns(s.body) else s.body + rest
            orelse = s.orelse if _returns(s.orelse) else s.orelse + rest
            body, orelse = _tail_returns(body), _tail_returns(orelse)
            if body is None or orelse is None:
                return None
            return out + [compat.make("If", test=s.test, body=body, orelse=orelse)]
        out.append(s)
    return None


_AST = gast.AST
_META_HELPERS = {"shape": runtime.shape, "size": runtime.size, "ndim": runtime.ndim}


def _rename(tree, mapping, renames, free, meta_helper, rank_of=lambda atom: None):
    """A copy of the rule's ``tree`` with its parameters replaced by the arguments and its names renamed.

    ``a.shape``, ``a.size`` and ``a.ndim`` of a parameter become ``shape(x)``,
    ``size(x)``, ``ndim(x)``: the argument may be a Python number or a list
    (``np.sum([x, 2 * x])``), which numpy takes where an array goes.
    ``ndim(x)`` is the number itself where ``rank_of(x)`` knows it.
    """
    def meta(attr, param):
        atom = mapping[param]
        if attr == "ndim":
            rank = rank_of(atom)
            if rank is not None:
                return compat.const(rank)
        return compat.call(compat.name(meta_helper(attr)), [compat.clone(atom)])

    def replace(node):
        if isinstance(node, gast.Attribute) and node.attr in _META_HELPERS and isinstance(node.value, gast.Name) \
                and node.value.id in mapping and node.value.id not in renames and isinstance(node.ctx, gast.Load):
            return meta(node.attr, node.value.id)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in _META_HELPERS \
                and isinstance(node.func.value, gast.Name) and free.get(node.func.value.id) == meta_helper(None) \
                and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], gast.Name) \
                and node.args[0].id in mapping and node.args[0].id not in renames:  # np.shape(a): shape(x)
            return meta(node.func.attr, node.args[0].id)
        if isinstance(node, gast.Name):
            if node.id in renames:
                return compat.make("Name", id=renames[node.id], ctx=node.ctx)
            if node.id in mapping and isinstance(node.ctx, gast.Load):
                return compat.clone(mapping[node.id])
            if node.id in free:
                return compat.make("Name", id=free[node.id], ctx=node.ctx)
        return None
    return _copy(tree, replace)


def _rank_of(ranks, g):
    """The rank of an atom: a number's is 0, a name's is what ``ranks`` knows (``ranks.rank``).

    The gradient ``g`` has none: it may be a number standing for an array
    (a scalar seed, the 0.0 of no gradient).
    """
    def rank_of(atom):
        if isinstance(atom, gast.Constant) and type(atom.value) in (int, float, complex):
            return 0
        if isinstance(atom, gast.Name) and atom.id != g:
            return ranks.rank(atom.id) if ranks is not None else None
        return None
    return rank_of


def _copy(node, replace):
    """``compat.clone(node)`` with every subtree for which ``replace`` returns a node replaced by it."""
    new = replace(node)
    if new is not None:
        return new
    copy = node.__class__.__new__(node.__class__)
    fields = copy.__dict__
    for key, value in node.__dict__.items():
        if value.__class__ is list:
            fields[key] = [_copy(v, replace) if isinstance(v, _AST) else v for v in value]
        elif isinstance(value, _AST):
            fields[key] = _copy(value, replace)
        else:
            fields[key] = value
    return copy


def _returns_assigned(stmts, target):
    """Each ``return v`` of ``stmts`` as ``target = v``, through if-statements."""
    return [compat.assign(target, s.value) if isinstance(s, gast.Return) else
            compat.make("If", test=s.test, body=_returns_assigned(s.body, target),
                        orelse=_returns_assigned(s.orelse, target)) if isinstance(s, gast.If) else s for s in stmts]


def _returns_to_assignments(stmts, targets, count, inliner, names, rule):
    out = []
    for s in stmts:
        if isinstance(s, gast.Return):
            prelude: list = []
            grads = inliner._split(s.value, count, list(targets), names, prelude, *rule)
            out += prelude
            for i, t in targets.items():
                out.append(compat.assign(t, grads.get(i, compat.const(0.0))))
        elif isinstance(s, gast.If):
            out.append(compat.make("If", test=s.test,
                                   body=_returns_to_assignments(s.body, targets, count, inliner, names, rule),
                                   orelse=_returns_to_assignments(s.orelse, targets, count, inliner, names, rule)))
        else:
            out.append(s)
    return out


def _rule_facts(fd):
    """What a parsed rule's ``def`` binds, whether it is straight-line code, and the names it reads in order.

    Worked out once per rule (rules are parsed once) and kept on the tree.
    """
    facts = fd.__dict__.get("_astgrad_facts")
    if facts is None:
        stored, straight = set(), True
        for node in compat.walk(fd):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                stored.add(node.id)
            if isinstance(node, (gast.For, gast.While, gast.Try, gast.With, gast.Lambda, gast.Global,
                                 gast.Nonlocal, gast.FunctionDef)) and node is not fd:
                straight = False
        reads = dict.fromkeys(n.id for n in gast.walk(fd) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))
        facts = (frozenset(stored), straight, tuple(reads))
        fd.__dict__["_astgrad_facts"] = facts
    return facts


def merge_repeated(args, grads, live):
    """``y * y``: the two equal contributions to ``dy`` become one, ``2 * dt * y``.

    Only for a name whose adjoint starts here (``a + a`` is ``2 * a`` exactly;
    ``dy + a + a`` would round differently from ``dy + 2 * a``).
    """
    grads = dict(grads)
    for i in sorted(grads):
        for j in sorted(grads):
            if j <= i or grads.get(i) is None or grads.get(j) is None:
                continue
            a, b = args[i], args[j]
            if isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id and a.id not in live \
                    and gast.dump(grads[i]) == gast.dump(grads[j]):
                grad = grads[i]
                if isinstance(grad, gast.BinOp) and isinstance(grad.op, gast.Mult):
                    # 2 * g * y equals 2 * (g * y) (doubling is exact), and is one array operation for a number g
                    grads[i] = compat.binop(compat.binop(compat.const(2), "Mult", grad.left), "Mult", grad.right)
                else:
                    grads[i] = compat.binop(compat.const(2), "Mult", grad)
                grads[j] = None
    return grads
