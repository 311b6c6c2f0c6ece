"""The derivative table: one entry per primitive, shared by both engines.

A *primitive* is any callable the engines treat as opaque: a numpy ufunc, a
numpy function, or a user function wrapped by :func:`primitive`.  Its *rule*
is a plain Python function called as ``rule(g, ans, *args, **kwargs)``, where
``g`` is the gradient flowing into the primitive's output, ``ans`` is that
output and ``args``/``kwargs`` are exactly what the primitive was called with.
It returns the gradient for each positional argument: a tuple with one entry
per positional argument (``None`` where an argument gets no gradient), or a
single value, which is the gradient of the first argument.  A sequence
argument (the list given to ``np.concatenate``) gets a list of gradients.

Rules never un-broadcast: the engines sum each gradient back to its
argument's shape with :func:`astgrad.rules.unbroadcast`, in one place.

Beside its reverse rule an entry holds forward (tangent) rules, one per
positional argument, registered with :func:`defjvp`: ``jvp(t, ans, *args,
**kwargs)`` returns the tangent of the output due to the tangent ``t`` of that
one argument (see ``_forward`` for the conventions).

The taped Tensor calls rules at ``backward()`` time; the source transformer
reads their source and inlines their bodies into the generated adjoint.  Rules
are therefore written as short, readable numpy code that also runs on Tensors
(through numpy's dispatch protocols), which is what makes higher-order
derivatives on the tape work without a second set of formulas.

Long: the table's entries and registration (defvjp, defjvp, defnondiff,
primitive) with the lazy loading of library rules; naming lives in _names.py.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import types
import warnings
from typing import Any, Callable

import numpy as np

from . import _deferred
from ._names import _public_path, library_function, names, qualified_name
from ._introspect import parameter_usage, positional_parameters, without_unneeded_gradients

__all__ = [
    "Rule",
    "defvjp",
    "defjvp",
    "defnondiff",
    "defbatch",
    "primitive",
    "lookup",
    "is_nondifferentiable",
    "NoRuleError",
    "registered",
    "generation",
]


class NoRuleError(TypeError):
    """Raised when a callable has no derivative rule in the table."""


class Rule:
    """A table entry: the primitive, its vjp and what the vjp reads, and its forward rules.

    ``jvps[i]`` is the forward rule of positional argument ``i`` (``None``:
    no tangent flows through that argument, an axis or an index);
    ``jvp_rest`` serves the positions past ``jvps`` of a primitive taking
    ``*args`` (``np.einsum``'s operands) and is told the position as the
    keyword ``argnum``.  ``batch`` is the batching rule (``vmap``, see
    ``batching``), which does not depend on the derivative: it stays when
    the reverse or forward rules are registered again.
    """

    def __init__(self, fn: Callable, vjp: Callable | None, name: str,
                 jvps: tuple = (), jvp_rest: Callable | None = None, batch: Callable | None = None):
        self.fn = fn
        self.vjp = vjp
        self.name = name
        self.jvps = tuple(jvps)
        self.jvp_rest = jvp_rest
        self.batch = batch
        self._usage: dict[str, str] | None = None
        self._keywords: Any = _UNREAD  # the keywords the vjp takes (None: any), read at the first call
        self._specialized: dict[tuple, tuple] = {}  # needed gradients -> (vjp variant, usage)

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None

    @property
    def usage(self) -> dict[str, str]:
        """How the vjp uses each of its parameters.

        Maps parameter name to ``"value"`` (the vjp reads the value),
        ``"meta"`` (only ``.shape``/``.ndim``/``.dtype``/``.size``) or
        ``"unused"``.  Computed once from the rule's source; when the source
        cannot be read every parameter counts as ``"value"``.
        """
        if self._usage is None:
            self._usage = parameter_usage(self.vjp) if self.vjp else {}
        return self._usage

    def specialized(self, needed: tuple) -> Callable:
        """The vjp computing only the gradients flagged in ``needed`` (``None`` for the rest).

        ``needed[i]`` says whether positional argument ``i`` wants a gradient.
        Rules that return a literal tuple get a compiled variant with the
        unneeded entries replaced by ``None``, so ``x ** 2`` on the tape does
        not compute the exponent's ``log``.  Other rules are returned as they
        are.  The transformer gets the same effect from dead-code elimination.
        """
        return self._variant(needed)[0]

    def usage_for(self, needed: tuple) -> dict[str, str]:
        """``usage`` of the variant :meth:`specialized` returns for ``needed``.

        ``x * 3`` needs no gradient for the constant, so its variant never
        reads ``x``: the tape then neither keeps ``x`` nor checks its version.
        """
        return self._variant(needed)[1]

    def _variant(self, needed: tuple) -> tuple:
        variant = self._specialized.get(needed)
        if variant is None:
            assert self.vjp is not None, "asked for the vjp of a non-differentiable entry"
            compiled = without_unneeded_gradients(self.vjp, needed)
            variant = compiled if compiled is not None else (self.vjp, self.usage)
            self._specialized[needed] = variant
        return variant

    def bind_keywords(self, args: tuple, kwargs: dict, wanted) -> tuple[tuple, dict] | None:
        """``(args, kwargs)`` with the keyword arguments ``wanted`` moved into their positions.

        A rule returns gradients for positional arguments only, so a value
        that needs one and was passed by keyword (``np.select(c, v,
        default=y)``) must reach the rule by position.  The keywords before
        it move along; parameters skipped on the way take the rule's
        default.  Returns ``None`` when a wanted keyword is not a positional
        parameter of the rule.
        """
        assert self.vjp is not None, "bind_keywords on a non-differentiable entry"
        params = positional_parameters(self.vjp)
        names = [p.name for p in params]
        if not all(key in names for key in wanted):
            return None
        last = max(names.index(key) for key in wanted)
        bound, kwargs = list(args), dict(kwargs)
        for param in params[len(bound):last + 1]:
            if param.name in kwargs:
                bound.append(kwargs.pop(param.name))
            elif param.default is not param.empty:
                bound.append(param.default)
            else:
                return None
        return tuple(bound), kwargs

    def refused_keyword(self, kwargs) -> tuple[str, str] | None:
        """Why a call with these keyword arguments has no gradient by this rule, and what to write; or ``None``.

        A keyword the reverse rule has no parameter for (``np.sum(x, where=m)``, ``np.var(x, mean=m)``)
        changes the value the rule does not know of: an error at the call, never a gradient of
        another function.
        """
        if self._keywords is _UNREAD:
            try:
                params = list(inspect.signature(self.vjp).parameters.values()) if self.vjp else []
            except (TypeError, ValueError):  # a rule whose signature cannot be read: take its call's word
                params = [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
            self._keywords = None if any(p.kind is p.VAR_KEYWORD for p in params) else \
                frozenset(p.name for p in params[2:] if p.kind is not p.POSITIONAL_ONLY)
        if self._keywords is None:  # **kwargs: takes any
            return None
        for key in kwargs:
            if key not in self._keywords:
                return (f"{self.name}'s gradient rule takes no {key}= argument, so astgrad cannot differentiate "
                        f"this call", f"{_KEYWORD_ADVICE.get(key, f'Call {self.name} without {key}=')}, or register "
                        f"a rule that takes it with astgrad.defvjp({self.name}, rule).")
        return None

    @property
    def has_jvp(self) -> bool:
        """Whether any argument has a forward rule."""
        return self.jvp_rest is not None or any(rule is not None for rule in self.jvps)

    def jvp_for(self, argnum: int) -> Callable | None:
        """The forward rule of positional argument ``argnum``, or ``None`` (no tangent flows through it)."""
        if argnum < len(self.jvps):
            return self.jvps[argnum]
        if self.jvp_rest is None:
            return None
        return functools.partial(self.jvp_rest, argnum=argnum)

    def __repr__(self) -> str:
        kind = "vjp" if self.vjp else "non-differentiable"
        return f"<Rule {self.name} ({kind})>"


_UNREAD = object()
_KEYWORD_ADVICE = {
    "where": "Select the elements first (x[m], or np.where(m, x, 0) in a sum)",
    "mean": "Leave mean= out: numpy computes the same mean",
    "initial": "Combine the initial value with the result yourself (np.maximum(np.max(x), v))",
}

_TABLE: dict[Any, Rule] = {}
#: primitives of a library whose result is a tuple of arrays (``scipy.linalg.cho_factor``): their gradient
#: and tangent are tuples too (numpy's such functions are listed in transform.primitives)
sequence_outputs: set = set()
#: primitives whose result is a tuple or an array by what they are given (a generated gradient called inside a
#: differentiated function, with a tuple wrt or not): the adjoint of an item read tells them apart when it runs
maybe_sequence_outputs: set = set()
_generation = 0
#: replaced (never changed in place) with every change to the table: code built
#: against the table holds the object it saw and tests ``_registry.version is
#: seen``, one attribute read, on each call (see transform.parse.Dependencies)
version = object()


def generation() -> int:
    """A counter that moves on with every change to the table.

    Generated adjoints inline rules, so a cache of them is only valid for the
    table generation it was built against.
    """
    return _generation


def _store(fn: Callable, rule: Rule) -> None:
    _TABLE[_key(fn)] = rule
    changed()


def changed() -> None:
    """Note a change to the table: everything built against it is out of date."""
    global _generation, version
    _generation += 1
    version = object()


def _key(fn: Callable) -> Any:
    return getattr(fn, "__astgrad_primitive__", fn)


def defvjp(fn: Callable, rule: Callable | None = None, *makers: Callable | None, name: str | None = None):
    """Register ``rule`` as the vector-Jacobian product of ``fn``.

    Usable as ``defvjp(fn, rule)`` or as a decorator ``@defvjp(fn)``.  A later
    registration for the same ``fn`` replaces the earlier one, with the
    entry's forward rules (register those again with :func:`defjvp`); the
    same rule registered again keeps them.  Returns the
    rule, so the decorated function stays usable.

    HIPS autograd's curried convention is accepted too:
    ``defvjp(fn, lambda ans, x, y: lambda g: ..., lambda ans, x, y: lambda g: ...)``,
    one maker per positional argument (``None`` where an argument has none).
    It is told from astgrad's ``rule(g, ans, *args)`` by the count: more
    than one maker, or one whose positional parameters number ``fn``'s plus
    one (astgrad's rule takes ``fn``'s plus two), or fewer than two before
    its ``*args``.  When neither tells (``fn`` takes ``*args`` and the rule
    ``(ans, x, *rest)``), the rule is read as astgrad's, and the function it
    returns as a gradient fails where it is used; a maker that does not
    return a function raises ``TypeError`` when called.
    """
    if rule is None:
        return functools.partial(defvjp, fn, name=name)
    for given in (rule, *makers):
        if given is not None and not callable(given):
            raise TypeError(f"defvjp: the rule for {qualified_name(fn)} must be callable, got {given!r}")
    if makers or _curried(fn, rule):
        rule = _from_makers(fn, (rule, *makers))
    _warn_if_the_tape_cannot_see(fn)
    old = find(fn)
    # a new reverse rule may disagree with the forward rules written for the old one: they go with it
    # (forward mode then asks for defjvp), unless the same rule is registered again
    kept = old is not None and old.fn is fn and old.vjp is rule
    _store(fn, Rule(fn, rule, name or qualified_name(fn), old.jvps if old is not None and kept else (),
                    old.jvp_rest if old is not None and kept else None,
                    old.batch if old is not None and old.fn is fn else None))
    return rule


def _positional_counts(fn: Callable) -> tuple[int, int] | None:
    """How many positional parameters ``fn`` requires and takes (None: any number, or unknown)."""
    nin = getattr(fn, "nin", None)
    if isinstance(nin, int) and not isinstance(fn, types.FunctionType):
        return nin, nin  # a ufunc: no signature to read
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in kinds]
    return sum(p.default is inspect.Parameter.empty for p in positional), len(positional)


def _curried(fn: Callable, rule: Callable) -> bool:
    """Whether the one rule given for ``fn`` is HIPS autograd's maker ``(ans, *args) -> (g -> gradient)``.

    astgrad's rule takes ``g`` and ``ans`` before ``fn``'s arguments: a rule
    with fewer than two positional parameters before its ``*args`` is a
    maker; otherwise the count decides where ``fn``'s can be read: a maker
    takes one more than ``fn``, astgrad's rule two more (each may leave out
    ``fn``'s parameters that have defaults).  Where both fit, a first
    parameter named ``ans`` makes it a maker.
    """
    try:
        params = list(inspect.signature(rule).parameters.values())
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    fixed = sum(p.kind in kinds for p in params)
    if fixed < 2:
        return True
    counts = _positional_counts(fn)
    if counts is None or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return False
    required, total = counts
    as_maker, as_rule = required + 1 <= fixed <= total + 1, required + 2 <= fixed <= total + 2
    return as_maker and (not as_rule or params[0].name == "ans")


def _from_makers(fn: Callable, makers: tuple) -> Callable:
    """astgrad's rule ``(g, ans, *args, **kwargs)`` calling HIPS autograd's makers, one per positional argument.

    Takes ``*args``, so generated code calls it instead of inlining it.  An
    argument without a maker gets ``None`` (an error where it needs a gradient).
    """
    what = qualified_name(fn)

    def rule(g, ans, *args, **kwargs):
        grads: list = []
        for i in range(len(args)):
            maker = makers[i] if i < len(makers) else None
            if maker is None:
                grads.append(None)
                continue
            vjp = maker(ans, *args, **kwargs)
            if not callable(vjp):
                raise TypeError(f"defvjp({what}, ...): the rule of argument {i} was read as HIPS autograd's "
                                f"(ans, *args) -> (g -> gradient), and it returned {type(vjp).__name__}, not a "
                                f"function of g. Write astgrad's rule(g, ans, *args) returning the gradients, or "
                                f"return lambda g: ... from the maker")
            grads.append(vjp(g))
        return grads[0] if len(grads) == 1 else tuple(grads)

    rule.__qualname__ = rule.__name__ = f"{getattr(fn, '__name__', 'fn')}_vjp_from_makers"
    return rule


TAPE_CANNOT_SEE = (
    "astgrad.defvjp({name}): {name} is a plain Python function, so only generated code uses this rule; the taped "
    "Tensor runs {name}'s body and never sees the call. Decorate it with @astgrad.primitive (before defvjp) for "
    "both engines to use the rule."
)


def _warn_if_the_tape_cannot_see(fn: Callable) -> None:
    """Warn when ``fn`` is a user's plain function: generated code calls it as a primitive, the tape cannot.

    The tape records numpy's callables through numpy's dispatch protocols
    and ``primitive`` wrappers through their hook; a plain Python function
    called on Tensors just runs, so a rule registered for it would silently
    reach one engine only.  A library's function (scipy's ``logsumexp``)
    cannot be decorated; the tape refuses to run it on Tensors (it turns them
    into arrays first), and ``rules.apply`` records it with its rule
    (docs/rules.md), so it gets no warning.
    """
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__astgrad_primitive__"):
        return
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "scipy", "astgrad") or library_function(fn):
        return
    warnings.warn(TAPE_CANNOT_SEE.format(name=getattr(fn, "__qualname__", repr(fn))), UserWarning, stacklevel=3)


def defjvp(fn: Callable, *rules: Callable | None, argnum: int | None = None, rest: Callable | None = None):
    """Register the forward (tangent) rules of ``fn``, one per positional argument.

    ``defjvp(fn, jvp_0, jvp_1, ...)`` sets the rule of each positional
    argument (``None`` for an argument no tangent flows through: an axis, an
    index); ``rest`` serves every position past them (a primitive taking
    ``*args``) and receives the position as the keyword ``argnum``.  As a
    decorator, ``@defjvp(fn)`` sets the rule of argument 0 and
    ``@defjvp(fn, argnum=1)`` that of argument 1, keeping the others.  A rule
    is ``jvp(t, ans, *args, **kwargs)``: the tangent of ``fn``'s output due to
    the tangent ``t`` of its one argument.  The entry's reverse rule
    (:func:`defvjp`) stays as it is; ``fn`` needs one first, since the table
    has one entry per primitive.  Returns the (last) rule.
    """
    if not rules and rest is None:
        return functools.partial(_defjvp_at, fn, 0 if argnum is None else argnum)
    for rule in (*rules, rest):
        if rule is not None and not callable(rule):
            raise TypeError(f"defjvp: a forward rule for {qualified_name(fn)} must be callable, got {rule!r}")
    if argnum is not None:
        if len(rules) != 1 or rest is not None:
            raise TypeError("defjvp: with argnum=, give exactly one rule")
        return _defjvp_at(fn, argnum, rules[0])
    old = _entry_for_jvp(fn)
    _store(fn, Rule(fn, old.vjp, old.name, rules, rest, old.batch))
    return rules[-1] if rules else rest


def _defjvp_at(fn: Callable, argnum: int, rule: Callable | None) -> Callable:
    """Set the forward rule of argument ``argnum`` of ``fn``, keeping the entry's other rules."""
    if not callable(rule):
        raise TypeError(f"defjvp: a forward rule for {qualified_name(fn)} must be callable, got {rule!r}")
    old = _entry_for_jvp(fn)
    jvps = list(old.jvps) + [None] * (argnum + 1 - len(old.jvps))
    jvps[argnum] = rule
    _store(fn, Rule(fn, old.vjp, old.name, tuple(jvps), old.jvp_rest, old.batch))
    return rule


def _entry_for_jvp(fn: Callable) -> Rule:
    """The entry a forward rule joins: ``fn``'s, which must have a reverse rule already."""
    old = find(fn)
    if old is None or old.vjp is None:
        raise TypeError(f"defjvp: {qualified_name(fn)} has no reverse rule; register it with "
                        f"astgrad.defvjp({qualified_name(fn)}, rule) first, then its forward rule")
    return old


def defnondiff(*fns: Callable) -> None:
    """Declare callables whose outputs carry no gradient (shape, argmax, ...)."""
    for fn in fns:
        old = _TABLE.get(_key(fn))
        _store(fn, Rule(fn, None, qualified_name(fn), batch=old.batch if old is not None and old.fn is fn else None))


def defbatch(fn: Callable, rule: Callable | None = None):
    """Register ``rule`` as the batching rule of ``fn`` (what ``astgrad.vmap`` writes for a call of it).

    ``rule(bdims, *args, **kwargs)`` gets ``fn``'s arguments, those that are
    batched with their batch axis first, and ``bdims``, a tuple with one
    entry per positional argument: ``0`` for a batched one, ``None`` for
    one every example shares (a list argument's is ``0``: vmap then gives
    every item the batch axis).  It returns what ``fn`` returns for each example, stacked along
    a new first axis.  ``fn`` needs an entry first (``defvjp`` or
    ``defnondiff``): the table has one entry per primitive.  Usable as a
    decorator, ``@defbatch(fn)``; returns the rule.
    """
    if rule is None:
        return functools.partial(defbatch, fn)
    if not callable(rule):
        raise TypeError(f"defbatch: the batching rule for {qualified_name(fn)} must be callable, got {rule!r}")
    old = find(fn)
    if old is None:
        raise TypeError(f"defbatch: {qualified_name(fn)} has no entry in the rule table; register its gradient "
                        f"with astgrad.defvjp({qualified_name(fn)}, rule) (or astgrad.defnondiff) first")
    _store(fn, Rule(old.fn, old.vjp, old.name, old.jvps, old.jvp_rest, rule))
    return rule


def lookup(fn: Callable) -> Rule:
    """The table entry for ``fn``; raises :class:`NoRuleError` if it has none."""
    rule = find(fn)
    if rule is None:
        raise NoRuleError(_no_rule_advice(fn))
    return rule


def _no_rule_advice(fn: Callable) -> str:
    """Why ``fn`` has no rule and what to write: the ``defvjp`` call only when ``fn`` has a name to write."""
    name = qualified_name(fn)
    if names(name, fn):
        what = (f"{name}, a function of an installed library: astgrad differentiates a library's functions "
                f"through rules only, never through their source" if library_function(fn) else name)
        return (
            f"no gradient rule for {what}. Register one with "
            f"astgrad.defvjp({name}, rule), where rule(g, ans, *args, **kwargs) "
            f"returns the gradient of each argument, or declare it "
            f"non-differentiable with astgrad.defnondiff({name})."
        )
    if str(getattr(type(fn), "__module__", "")).startswith("scipy.stats") and hasattr(fn, "freeze"):  # norm(...)
        public = _public_path(fn, None) or qualified_name(type(fn))
        return (f"no gradient rule for {public}(...), which makes a frozen distribution: astgrad differentiates "
                f"the distribution's methods with its parameters as arguments. Write {public}.logpdf(x, loc, scale) "
                f"(and so on for each method) instead of {public}(loc, scale).logpdf(x).")
    if isinstance(fn, functools.partial):
        inner = qualified_name(fn.func)
        fix = (f"call {inner} with all its arguments, or register a rule for {inner} itself "
               f"(astgrad.defvjp({inner}, rule)) if it has none" if names(inner, fn.func)
               else "write the computation as a module-level function")
    else:
        fix = ("write the computation as a module-level function decorated with @astgrad.primitive "
               "and register its rule with astgrad.defvjp(that_function, rule)")
    return (f"no gradient rule for {name}: rules are registered on a named function, and this callable "
            f"has no name that leads back to it. Instead, {fix}.")


def find(fn: Callable) -> Rule | None:
    """The table entry for ``fn`` or ``None``.

    A miss first registers the rules of any optional library (scipy) imported
    since (``_deferred``), then looks again.
    """
    try:
        rule = _TABLE.get(_key(fn))
        if rule is None and load_deferred():
            rule = _TABLE.get(_key(fn))
        for derive in derived if rule is None else ():
            rule = derive(fn)
            if rule is not None:
                break
        return rule
    except TypeError:
        return None


#: ``derive(fn) -> Rule | None``, asked for a callable the table lacks: an entry made at each lookup from another's
#: (a frozen scipy.stats distribution's method from its distribution's: too many to register one by one)
derived: list[Callable[[Callable], "Rule | None"]] = []


def is_nondifferentiable(fn: Callable) -> bool:
    rule = find(fn)
    return rule is not None and rule.vjp is None


def registered() -> list[Rule]:
    """Every entry of the table, in registration order."""
    return list(_TABLE.values())


_SHIPPED: set = set()


def mark_shipped() -> None:
    """Remember the entries astgrad itself registers (called once the package is imported)."""
    global _deferred_ready
    _SHIPPED.update(_TABLE)
    _deferred_ready = True


#: set once astgrad's own table is complete (``mark_shipped``): no library's rules load while it is filled,
#: nor while they load (their registrations look entries up)
_deferred_ready = False


def load_deferred() -> bool:
    """Register the rules of every optional library (scipy) imported since; whether any were (``_deferred``)."""
    global _deferred_ready
    if not _deferred_ready:
        return False
    modules = _deferred.take_imported()
    if not modules:
        return False
    _deferred_ready = False
    try:
        before = dict(_TABLE)  # once: a later module may add to an earlier one's entries (its batching rules)
        for module in modules:
            importlib.import_module(module)
        for key, rule in before.items():  # the user's own rule for a library callable stays
            if _TABLE.get(key) is not rule:
                _TABLE[key] = rule
        _SHIPPED.update(key for key in _TABLE if key not in before)
    finally:
        _deferred_ready = True
    changed()
    return True


def is_shipped(fn: Callable) -> bool:
    """Whether ``fn`` is a callable astgrad itself has an entry for (numpy's, scipy's), not a user's primitive."""
    try:
        return _key(fn) in _SHIPPED
    except TypeError:
        return False


def shipped() -> list[Rule]:
    """The entries astgrad ships, without those users or tests registered since."""
    return [rule for key, rule in _TABLE.items() if key in _SHIPPED]


# --------------------------------------------------------------------------
# user primitives


def primitive(fn: Callable) -> Callable:
    """Make ``fn`` opaque to both engines; give it a rule with :func:`defvjp`.

    Called with plain arrays, the wrapper just calls ``fn``.  Called with
    taped Tensors, it records a single node whose backward is ``fn``'s rule.
    The source transformer calls it as it is and inlines its rule.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        dispatcher = _find_dispatcher(args, kwargs)
        if dispatcher is not None:
            return dispatcher(wrapper, args, kwargs)
        return fn(*args, **kwargs)

    wrapper.__astgrad_primitive__ = wrapper  # type: ignore[attr-defined]
    wrapper.__astgrad_raw__ = fn  # type: ignore[attr-defined]
    # generated code may call the function itself (no search for Tensors): the table finds its entry by it too,
    # so code differentiating that code again reads its rule, never its source
    fn.__astgrad_primitive__ = wrapper  # type: ignore[attr-defined]
    return wrapper


def apply(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, recorded on the tape as one node with ``fn``'s rule when an argument is a Tensor.

    The tape sees numpy's functions and ufuncs (scipy.special's too) through
    numpy's dispatch protocols, but a library's Python function (scipy's
    ``logsumexp``, ``scipy.linalg.solve``, ``scipy.stats.norm.cdf``) turns a
    Tensor into an array first, which a Tensor that requires grad refuses.
    ``astgrad.rules.apply(scipy.linalg.solve, a, b)`` calls it through its
    rule instead.  Generated code needs none of this: it calls ``fn`` itself.
    """
    dispatcher = _find_dispatcher(args, kwargs)
    if dispatcher is not None:
        return dispatcher(fn, args, kwargs)
    return fn(*args, **kwargs)


def _find_dispatcher(args, kwargs):
    """The ``_astgrad_apply`` hook of the first taped argument, if any.

    The tape's Tensor class defines ``_astgrad_apply(fn, args, kwargs)``; the
    rules package never imports the tape.
    """
    for value in (*args, *kwargs.values()) if kwargs else args:
        kind = type(value)
        if kind in _UNTAPED:  # an array or a number: most calls from generated code
            continue
        if isinstance(value, (list, tuple)):
            for item in value:
                if type(item) not in _UNTAPED and (hook := getattr(type(item), "_astgrad_apply", None)) is not None:
                    return hook
            if kind is tuple or kind is list:
                continue
        hook = getattr(kind, "_astgrad_apply", None)
        if hook is not None:
            return hook
    return None


#: types that are never the tape's (no ``_astgrad_apply``): looked up in a set, where ``getattr`` on a class that
#: lacks the hook costs a caught AttributeError, a few microseconds on each call of a primitive from generated code
_UNTAPED = frozenset({np.ndarray, float, int, bool, complex, type(None), slice, str, type(Ellipsis),
                      np.float64, np.float32, np.int64, np.int32, np.intp, np.bool_, np.complex128})


def raw(fn: Callable) -> Callable:
    """The undecorated function behind a :func:`primitive` wrapper."""
    return getattr(fn, "__astgrad_raw__", fn)
