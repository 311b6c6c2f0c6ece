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
"""

from __future__ import annotations

import builtins
import functools
import importlib
import os
import site
import sys
import sysconfig
import types
import warnings
from typing import Any, Callable

from . import _deferred
from ._introspect import parameter_usage, positional_parameters, without_unneeded_gradients

__all__ = [
    "Rule",
    "defvjp",
    "defjvp",
    "defnondiff",
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
    keyword ``argnum``.
    """

    def __init__(self, fn: Callable, vjp: Callable | None, name: str,
                 jvps: tuple = (), jvp_rest: Callable | None = None):
        self.fn = fn
        self.vjp = vjp
        self.name = name
        self.jvps = tuple(jvps)
        self.jvp_rest = jvp_rest
        self._usage: dict[str, str] | None = None
        self._specialized: dict[tuple, Callable] = {}

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

    def _variant(self, needed: tuple):
        variant = self._specialized.get(needed)
        if variant is None:
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
        params = positional_parameters(self.vjp)
        names = [p.name for p in params]
        if not all(key in names for key in wanted):
            return None
        last = max(names.index(key) for key in wanted)
        args, kwargs = list(args), dict(kwargs)
        for param in params[len(args):last + 1]:
            if param.name in kwargs:
                args.append(kwargs.pop(param.name))
            elif param.default is not param.empty:
                args.append(param.default)
            else:
                return None
        return tuple(args), kwargs

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


_TABLE: dict[Any, Rule] = {}
#: primitives of a library whose result is a tuple of arrays (``scipy.linalg.cho_factor``): their gradient
#: and tangent are tuples too (numpy's such functions are listed in transform.primitives)
sequence_outputs: set = set()
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


def qualified_name(fn: Callable) -> str:
    """A name a user recognises: ``numpy.sin``, ``numpy.linalg.norm``.

    A callable without a name of its own (a ``functools.partial``, an instance
    of a class with ``__call__``) is described, never shown by its ``repr``.
    """
    if isinstance(fn, functools.partial):
        return f"functools.partial({qualified_name(fn.func)}, ...)"
    if not hasattr(fn, "__qualname__") and not hasattr(fn, "__name__"):
        return f"a {qualified_name(type(fn))} instance"
    module = getattr(fn, "__module__", None) or ""
    if isinstance(fn, type(abs)) and module in ("", "builtins") and hasattr(fn, "__self__"):
        module = ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if module.startswith("numpy"):
        module = "numpy" if module in ("numpy", "numpy._core.fromnumeric", "numpy._core.numeric",
                                       "numpy._core.multiarray", "numpy._core.umath") else module
    if module.startswith("astgrad.rules._"):
        module = "astgrad.rules"
    if type(fn).__name__ == "ufunc":
        if vars(sys.modules["numpy"]).get(fn.__name__) is fn:
            return f"numpy.{fn.__name__}"
        return _public_path(fn, fn.__name__) or f"numpy.{fn.__name__}"  # scipy.special's ufuncs
    if isinstance(fn, types.MethodType) and not isinstance(fn.__self__, (type, types.ModuleType)):
        owner = _public_path(fn.__self__, None)  # scipy.stats.norm.cdf: a method of a library's object
        if owner is not None:
            return f"{owner}.{fn.__name__}"
    if module and not module.startswith(("numpy", "astgrad")) and "._" in f".{module}" and name.isidentifier():
        module = _public_module(fn, module, name) or module  # scipy.linalg._basic.solve as scipy.linalg.solve
    return f"{module}.{name}" if module and module != "builtins" else name


def _public_module(fn, module: str, name: str) -> str | None:
    """The shortest public parent of ``module`` (no part starting ``_``) that exports ``fn`` as ``name``."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        if any(part.startswith("_") for part in parts[:end]):
            break
        parent = sys.modules.get(".".join(parts[:end]))
        if parent is not None and vars(parent).get(name) is fn:
            return ".".join(parts[:end])
    return None


def _public_path(obj, name: str | None) -> str | None:
    """``module.name`` of a module-level object without a ``__module__`` of its own (a ufunc, an instance).

    Searched among the imported public modules (no part starting ``_``), read
    through their dicts (never a module's ``__getattr__``), the shortest path
    first: ``scipy.special.gammaln``, ``scipy.stats.norm``.
    """
    found = []
    package = None if name is not None else (getattr(type(obj), "__module__", None) or "").split(".")[0]
    for module_name, module in list(sys.modules.items()):
        if module is None or any(part.startswith("_") for part in module_name.split(".")):
            continue
        if package is not None and module_name.split(".")[0] != package:  # an instance: its class's package
            continue
        try:
            members = vars(module)
        except TypeError:
            continue
        if name is not None:
            if members.get(name) is obj:
                found.append(f"{module_name}.{name}")
            continue
        for key, value in list(members.items()):
            if value is obj and not key.startswith("_"):
                found.append(f"{module_name}.{key}")
    return min(found, key=lambda path: (path.count("."), len(path))) if found else None


def defvjp(fn: Callable, rule: Callable | None = None, *, name: str | None = None):
    """Register ``rule`` as the vector-Jacobian product of ``fn``.

    Usable as ``defvjp(fn, rule)`` or as a decorator ``@defvjp(fn)``.  A later
    registration for the same ``fn`` replaces the earlier one, with the
    entry's forward rules (register those again with :func:`defjvp`); the
    same rule registered again keeps them.  Returns the
    rule, so the decorated function stays usable.
    """
    if rule is None:
        return functools.partial(defvjp, fn, name=name)
    if not callable(rule):
        raise TypeError(f"defvjp: the rule for {qualified_name(fn)} must be callable, got {rule!r}")
    _warn_if_the_tape_cannot_see(fn)
    old = find(fn)
    # a new reverse rule may disagree with the forward rules written for the old one: they go with it
    # (forward mode then asks for defjvp), unless the same rule is registered again
    kept = old is not None and old.fn is fn and old.vjp is rule
    _store(fn, Rule(fn, rule, name or qualified_name(fn), old.jvps if kept else (), old.jvp_rest if kept else None))
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
    _store(fn, Rule(fn, old.vjp, old.name, rules, rest))
    return rules[-1] if rules else rest


def _defjvp_at(fn: Callable, argnum: int, rule: Callable) -> Callable:
    """Set the forward rule of argument ``argnum`` of ``fn``, keeping the entry's other rules."""
    if not callable(rule):
        raise TypeError(f"defjvp: a forward rule for {qualified_name(fn)} must be callable, got {rule!r}")
    old = _entry_for_jvp(fn)
    jvps = list(old.jvps) + [None] * (argnum + 1 - len(old.jvps))
    jvps[argnum] = rule
    _store(fn, Rule(fn, old.vjp, old.name, jvps, old.jvp_rest))
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
        _store(fn, Rule(fn, None, qualified_name(fn)))


def lookup(fn: Callable) -> Rule:
    """The table entry for ``fn``; raises :class:`NoRuleError` if it has none."""
    rule = find(fn)
    if rule is None:
        raise NoRuleError(_no_rule_advice(fn))
    return rule


def _no_rule_advice(fn: Callable) -> str:
    """Why ``fn`` has no rule and what to write: the ``defvjp`` call only when ``fn`` has a name to write."""
    name = qualified_name(fn)
    if _names(name, fn):
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
               f"(astgrad.defvjp({inner}, rule)) if it has none" if _names(inner, fn.func)
               else "write the computation as a module-level function")
    else:
        fix = ("write the computation as a module-level function decorated with @astgrad.primitive "
               "and register its rule with astgrad.defvjp(that_function, rule)")
    return (f"no gradient rule for {name}: rules are registered on a named function, and this callable "
            f"has no name that leads back to it. Instead, {fix}.")


def _library_paths() -> tuple:
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(getattr(site, "getsitepackages", list)())
    return tuple(os.path.join(os.path.realpath(path), "") for path in paths)


_LIBRARY_PATHS = _library_paths()


def library_function(fn) -> bool:
    """A Python function of the standard library or an installed package (scipy's ``logsumexp``), not astgrad's.

    Only the user's code is differentiated through its source: a library
    function is a primitive with a rule in the table, or refused where the
    user calls it (docs/guarantees.md).  A package installed in editable mode
    is the user's own code, where it lives.
    """
    fn = fn.__func__ if isinstance(fn, types.MethodType) else fn  # scipy.stats.norm.cdf: its class's function
    code = getattr(fn, "__code__", None)
    module = str(getattr(fn, "__module__", "") or "")
    if not isinstance(fn, types.FunctionType) or code is None or module.split(".")[0] == "astgrad":
        return False
    return os.path.realpath(code.co_filename).startswith(_LIBRARY_PATHS)


def _names(name: str, fn) -> bool:
    """Does the dotted ``name`` (``numpy.linalg.norm``) lead back to ``fn`` through ``sys.modules``?"""
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    if len(parts) == 1:
        return getattr(builtins, name, None) is fn
    for split in range(len(parts) - 1, 0, -1):
        value = sys.modules.get(".".join(parts[:split]))
        if value is None:
            continue
        for part in parts[split:]:
            value = getattr(value, part, None)
        return value is fn or (value is not None and value == fn)
    return False


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
        for module in modules:
            before = dict(_TABLE)
            importlib.import_module(module)
            for key, rule in before.items():  # the user's own rule for a library callable stays
                if _TABLE.get(key) is not rule:
                    _TABLE[key] = rule
            _SHIPPED.update(key for key in _TABLE if key not in before)
    finally:
        _deferred_ready = True
    changed()
    return True


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

    wrapper.__astgrad_primitive__ = wrapper
    wrapper.__astgrad_raw__ = fn
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
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            for item in value:
                hook = getattr(type(item), "_astgrad_apply", None)
                if hook is not None:
                    return hook
        hook = getattr(type(value), "_astgrad_apply", None)
        if hook is not None:
            return hook
    return None


def raw(fn: Callable) -> Callable:
    """The undecorated function behind a :func:`primitive` wrapper."""
    return getattr(fn, "__astgrad_raw__", fn)
