"""What a user function does that would differ when a checkpoint runs it again: random draws, writes.

Checkpointing runs the code it marks a second time in the reverse sweep
(runtime checkpoints, core checkpoints): a function that draws random
numbers (``random_use``) or writes state its call does not return
(``state_writes``: a global list appended to, an argument or attribute
written) would compute something else the second time, and the gradient
would be of another function.  Both are read from the function's code and
that of the user functions and methods it names, erring toward refusing;
numpy's, scipy's and astgrad's own functions are not read for writes.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import textwrap
import types

import numpy as np

from .checkpoints import GENERATORS, Checkpointed

_RANDOM_MODULES = ("random", "numpy.random", "secrets")


#: the names of the methods of numpy's and Python's generators that draw numbers: ``x.normal(...)`` on an
#: object astgrad cannot see into (``self.rng``) is taken for a draw
_DRAWS = frozenset({
    "normal", "standard_normal", "uniform", "integers", "choice", "permutation", "permuted", "shuffle",
    "binomial", "poisson", "exponential", "standard_exponential", "multivariate_normal", "dirichlet", "rand",
    "randn", "randint", "random_sample", "random_integers", "bytes", "gauss", "normalvariate", "randrange",
    "getrandbits", "sample", "choices", "triangular", "lognormal", "laplace", "logistic", "gumbel", "weibull",
    "geometric", "hypergeometric", "multinomial", "negative_binomial", "standard_cauchy", "standard_t",
    "standard_gamma", "vonmises", "wald", "zipf", "rayleigh", "pareto", "power", "chisquare", "noncentral_f",
    "noncentral_chisquare", "f", "beta", "gamma", "spawn", "jumped", "advance"})


def random_use(fn, _seen=None, _owner=None) -> str | None:
    """What in ``fn`` (or a user function or method it calls) draws random numbers, or None: read from its code.

    A name ``random`` read as an attribute (``np.random.normal``), a
    global holding a random module or generator, a bound method of a
    generator, or a method call named as a generator's draws are
    (``self.rng.normal(...)``, ``_DRAWS``).  Methods are followed on the
    objects the code names and on its own class.  It errs toward refusing:
    a method of yours named ``normal`` is refused too.
    """
    return _read_code(fn, _random_in, _seen if _seen is not None else set(), _owner)


def state_writes(fn) -> str | None:
    """What in ``fn`` (or a user function or method it calls) writes state that outlives the call, or None.

    Run again in the reverse sweep, such a function would write it again
    (``LOG.append(t)`` twice) and the steps run again would read what the
    first run wrote (``len(LOG)``): their values, and the gradient, would
    differ from the first run's.  Read from the source, erring toward
    refusing: an item or attribute write (``a[i] = v``, ``self.n = v``) or a
    call of a method named as a container's in-place ones (``_MUTATORS``) on
    a name not bound only to objects the function made (``_written``), or a
    global or enclosing name rebound; without the source, any of those in
    its bytecode, whatever object it writes.  numpy's, scipy's and
    astgrad's functions are not read.
    """
    return _read_code(fn, _writes_in, set(), None, skip=library)


def _read_code(fn, look, seen, owner=None, skip=None) -> str | None:
    """``look(fn, code, values)`` (a reason or None) on the code of ``fn``, its nested functions, and the user
    functions and methods it names (globals, closures, methods of its class and of the objects it names),
    each once (``seen``); a bound method of a random generator is a reason of its own."""
    fn = getattr(fn, "__wrapped__", fn)
    if isinstance(fn, functools.partial):
        return _read_code(fn.func, look, seen, None, skip)
    if isinstance(fn, types.MethodType):
        if isinstance(fn.__self__, GENERATORS):
            return f"{fn.__qualname__} of a random generator"
        return _read_code(fn.__func__, look, seen, type(fn.__self__), skip)
    if not isinstance(fn, types.FunctionType) or id(fn) in seen or (skip is not None and skip(fn)):
        return None
    seen.add(id(fn))
    values = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:
            pass
    owners = [owner if owner is not None else _class_of(fn)]
    owners += [type(v) for v in values.values() if _user_object(v)]
    for code in _codes(fn.__code__):
        found = look(fn, code, values)
        if found:
            return found
        for attr in _attributes(code, values):
            for kind in owners:
                method = getattr(kind, attr, None) if kind is not None else None
                found = _read_code(method, look, seen, kind, skip) if isinstance(method, types.FunctionType) else None
                if found:
                    return found
        for name in code.co_names + code.co_freevars:
            value = values.get(name)
            if isinstance(value, (types.FunctionType, functools.partial, types.MethodType, Checkpointed)):
                found = _read_code(value, look, seen, None, skip)
                if found:
                    return found
    return None


def _random_in(fn, code, values) -> str | None:
    if "random" in code.co_names:
        return f"{fn.__qualname__} reads an attribute named random"
    for attr in _attributes(code, values):
        if attr in _DRAWS:
            return f"{fn.__qualname__} calls .{attr}(...), the name of a random generator's draw"
    for name in code.co_names + code.co_freevars:
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, types.ModuleType) and value.__name__ in _RANDOM_MODULES:
            return f"{fn.__qualname__} uses the module {value.__name__}"
        if isinstance(value, GENERATORS):
            return f"{fn.__qualname__} uses the random generator {name}"
        if isinstance(getattr(value, "__self__", None), GENERATORS):
            return f"{fn.__qualname__} calls {name}, a method of a random generator"
        if getattr(value, "__module__", None) in _RANDOM_MODULES and callable(value):
            return f"{fn.__qualname__} calls {value.__module__}.{getattr(value, '__name__', name)}"
    return None


#: the names of the in-place methods of Python's containers and numpy's arrays: ``x.append(v)`` in code
#: run again is taken for a write, on whatever ``x`` is
_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add", "discard",
    "sort", "reverse", "fill", "put", "resize", "itemset", "setfield", "partition", "__setitem__",
    "__delitem__", "__iadd__", "__isub__", "__imul__", "appendleft", "extendleft", "popleft", "rotate"})


def _writes_in(fn, code, values) -> str | None:
    """A write in ``fn`` into anything but an object it made itself (read from its source, ``_written``), or,
    without its source, any item, attribute or in-place method write in ``code``."""
    tree = _source_tree(fn)
    if tree is not None:
        return _written(fn, tree) if code is fn.__code__ else None
    where = f"{fn.__qualname__} ({code.co_filename}:{code.co_firstlineno})"
    for i in dis.get_instructions(code):
        if i.opname in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            return f"{where} writes an item (x[...] = ...)"
        if i.opname in ("STORE_ATTR", "DELETE_ATTR"):
            return f"{where} sets the attribute .{i.argval}"
        if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            return f"{where} rebinds the global {i.argval}"
        if i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in code.co_freevars:
            return f"{where} rebinds {i.argval} of an enclosing function"
    for attr in _attributes(code, values):
        if attr in _MUTATORS:
            return f"{where} calls .{attr}(...), the name of an in-place method"
    return None


def _source_tree(fn):
    """The parsed source of ``fn``, or None where it cannot be trusted to be ``fn``'s: ``inspect`` reads lines by
    file name, and a function made by ``exec`` or ``compile`` from a string has none of its own (Python 3.13 gives
    ``"\n"`` for ``<string>``; another string compiled under that name would give its lines).  The source must
    hold a definition of that name (or a lambda) and every attribute the code loads."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    first = tree.body[0] if tree.body else None
    defined = isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef)) and first.name == fn.__name__ or \
        fn.__name__ == "<lambda>" and any(isinstance(node, ast.Lambda) for node in ast.walk(tree))
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    if not defined or not _attributes(fn.__code__, {}) <= attributes:
        return None
    return tree


#: numpy's functions that return a new array (never one of their arguments): a name bound only to their
#: results, to literals, comprehensions, arithmetic or ``.copy()`` holds an object the function made
_MAKERS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
                     "array", "copy", "arange", "linspace", "eye", "identity", "concatenate", "stack", "vstack",
                     "hstack", "dict", "list", "set", "deque"})


def _written(fn, tree) -> str | None:
    """The first write in ``tree`` (a function's source) that may outlive the call: an item, attribute or in-place
    method write on a name not bound only to objects the function made (``_MAKERS``), a global or nonlocal."""
    bound: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        for other in _other_bindings(node):
            bound.setdefault(other, []).append(None)
    made = {name for name, values in bound.items() if all(_made(v) for v in values)}
    lines = getattr(fn.__code__, "co_firstlineno", 1) - 1

    def where(node, what):
        return f"{fn.__qualname__} ({fn.__code__.co_filename}:{node.lineno + lines}) {what}"

    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return where(node, f"rebinds {', '.join(node.names)} outside itself")
        stores = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in stores:
            for part in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if isinstance(part, (ast.Subscript, ast.Attribute)) and _root(part) not in made:
                    return where(node, f"writes into {ast.unparse(part)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS \
                and _root(node.func.value) not in made and not _module_attribute(node.func, fn):
            return where(node, f"calls {ast.unparse(node.func)}(...), the name of an in-place method")
    return None


def _other_bindings(node):
    """Names ``node`` binds other than by ``name = value`` (parameters, loop and ``with`` targets, unpacking,
    ``:=``, annotated assignments): what they hold is not known to be the function's own."""
    if isinstance(node, ast.arg):
        return [node.arg]
    targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr,
                                                  ast.AnnAssign)) else \
        [node.optional_vars] if isinstance(node, ast.withitem) and node.optional_vars is not None else \
        [t for t in node.targets if not isinstance(t, ast.Name)] if isinstance(node, ast.Assign) else []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _made(value) -> bool:
    """``value`` makes a new object: a literal, a comprehension, arithmetic, ``x.copy()``, ``np.zeros(...)``."""
    if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                          ast.SetComp, ast.BinOp, ast.UnaryOp, ast.Compare)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        return name in _MAKERS
    return False


def _root(node):
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _module_attribute(func, fn) -> bool:
    """``np.sort(...)``-like: an attribute of a module the function names (a library's function, not a method)."""
    root = _root(func.value)
    return root is not None and isinstance(fn.__globals__.get(root), types.ModuleType)


def library(fn) -> bool:
    """numpy's, scipy's or astgrad's own function: not the user's code."""
    return str(getattr(fn, "__module__", "") or "").split(".")[0] in ("numpy", "scipy", "astgrad")


def _attributes(code, values):
    """The attribute names ``code`` loads (``x.name``, ``x.name(...)``) of anything but a module (``np.power``,
    ``stats.gamma``: a library's functions, which draw nothing unless named ``random``)."""
    found, before = set(), None
    for i in dis.get_instructions(code):
        if i.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            on_module = before is not None and before.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME") \
                and isinstance(values.get(before.argval), types.ModuleType)
            if not on_module:
                found.add(i.argval)
        before = i
    return found


def _class_of(fn):
    """The class a function is defined in (a method's own class, for ``self.other()``), or None."""
    owner = fn.__globals__.get(fn.__qualname__.split(".")[0]) if "." in fn.__qualname__ else None
    for part in fn.__qualname__.split(".")[1:-1]:
        owner = getattr(owner, part, None)
    return owner if isinstance(owner, type) else None


def _user_object(value) -> bool:
    kind = type(value)
    return not isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                                  int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset,
                                  np.ndarray, np.generic)) and value is not None \
        and str(getattr(kind, "__module__", "")).split(".")[0] not in ("numpy", "scipy", "builtins", "astgrad")


def _codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)
