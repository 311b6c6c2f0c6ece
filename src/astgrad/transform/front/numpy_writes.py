"""Which numpy calls write into memory they are given, read from numpy itself.

numpy writes into an existing array through more doors than ``out=``: a
ufunc's outputs passed by position (``np.maximum(a, 0.0, a)``, from its
``nin`` and ``nout``), the positional ``out`` of a ufunc's methods
(``np.add.reduce(m, 0, None, y)``) and of functions and array methods
(``np.cumsum(a, 0, None, y)``), and flags: ``overwrite_input=True`` lets
``np.median`` leave its argument in any order, ``copy=False`` makes
``np.nan_to_num`` replace values in place.  The doors are read from each
callable's signature (``inspect.signature``; for a callable without one,
the first line of its docstring), once per callable, so a numpy release's
new parameter is known the day it is installed; what a parameter does is
told by its name (``out``, ``overwrite_*``, ``inplace``), and for ``copy``
by numpy's own description of it (in place, or a view of the input).
``tests/transform/test_numpy_write_doors.py`` enumerates numpy's namespaces
and array methods and fails on a writing parameter this module does not
know.

Some doors cannot be read this way: the array methods that write into the
array they are called on (``WRITING_METHODS``: their signatures say
nothing), and the builtins that reach objects other than by a name the
analysis sees (``UNSEEN``: ``exec``, ``globals()``, ``sys.modules``...).
Those are lists, and the test checks them against ``dir(np.ndarray)``.
"""

from __future__ import annotations

import builtins
import inspect
import re
import sys
import types
from typing import NamedTuple

import numpy as np

#: the namespaces whose callables the test enumerates
NAMESPACES = {"numpy": np, "numpy.linalg": np.linalg, "numpy.fft": np.fft, "numpy.random": np.random,
              "numpy.random.Generator": np.random.default_rng(0)}

OUT = "out"  # the result is stored into the argument
SIZED = "sized out"  # the argument is the result, its shape the result's (``rng.random(size, dtype, out)``)
SCRAMBLE = "scramble"  # the argument may be left with other values (``overwrite_input=True``)
IN_PLACE = "in place"  # the result is computed into the argument and returned (``copy=False``)

#: ndarray methods that write into the array they are called on (``byteswap`` only with ``inplace=True``)
WRITING_METHODS = frozenset({"fill", "sort", "put", "partition", "resize", "setfield", "setflags", "byteswap",
                             "itemset", "__setitem__", "__delitem__", "__setstate__", "__array_finalize__"} | {
    m for m in dir(np.ndarray) if re.fullmatch(r"__i(add|sub|mul|matmul|truediv|floordiv|mod|pow|lshift|rshift|and|or|"
                                              r"xor)__", m)})

#: methods of lists, dicts and sets that change them, and generators' ``shuffle``: with ``WRITING_METHODS``, the
#: names of methods that change the object they are called on
CONTAINER_CHANGES = frozenset({"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "update",
                               "setdefault", "popitem", "add", "discard", "shuffle", "copyto"})
CHANGING = WRITING_METHODS | CONTAINER_CHANGES

#: the public ndarray methods and attributes known to only read the array (numpy 1.25 to 2.x); the test
#: fails on one that is in neither list, so a new method is classified before a user meets it
READING_METHODS = frozenset(
    "T all any argmax argmin argpartition argsort astype base choose clip compress conj conjugate copy ctypes "
    "cumprod cumsum data device diagonal dot dtype dump dumps flags flat flatten getfield imag item itemsize mT "
    "max mean min nbytes ndim newbyteorder nonzero prod ptp ravel real repeat reshape round searchsorted shape "
    "size squeeze std strides sum swapaxes take to_device tobytes tofile tolist tostring trace transpose var "
    "view".split())

#: how a call reaches objects other than by a name: what it lets the code do, for the messages
UNSEEN = {builtins.exec: "exec runs code astgrad cannot read", builtins.eval: "eval runs code astgrad cannot read",
          builtins.compile: "compile makes code astgrad cannot read",
          builtins.globals: "globals() reaches every global by a string",
          builtins.locals: "locals() reaches every local by a string",
          builtins.vars: "vars() reaches an object's names by a string",
          builtins.__import__: "__import__ reaches a module by a string"}


def unseen(obj):
    """Why ``obj`` reaches objects other than by a name the analysis sees (``exec``, ``sys.modules``), or None."""
    if obj is sys.modules:
        return "sys.modules reaches every module, and its globals, by a string"
    try:
        return UNSEEN.get(obj)
    except TypeError:  # unhashable
        return None


class Door(NamedTuple):
    """A parameter of a callable through which a call may write into an argument."""

    parameter: str  # "out", "overwrite_input", "copy", ...
    position: int | None  # where it is passed by position (None: by keyword only)
    kind: str  # OUT, SCRAMBLE or IN_PLACE
    target: int | None  # a flag's: the position of the argument it lets the call write into
    target_name: str | None


_CACHE: dict = {}


def doors(fn) -> tuple[Door, ...]:
    """The doors of ``fn`` (a numpy function, ufunc, ufunc method or ndarray method), read once."""
    owner = getattr(fn, "__self__", None)
    key = (owner, fn.__name__) if isinstance(fn, types.BuiltinMethodType) and owner is not None and \
        not isinstance(owner, types.ModuleType) else fn  # np.add.reduce is a new object at each access
    try:
        return _CACHE[key]
    except KeyError:
        found = _CACHE[key] = _read_doors(fn)
        return found
    except TypeError:  # unhashable
        return _read_doors(fn)


def _read_doors(fn) -> tuple[Door, ...]:
    if isinstance(fn, np.ufunc):
        return tuple(Door(OUT, fn.nin + i, OUT, None, None) for i in range(fn.nout))
    params = parameters(fn)
    if params is None:
        return ()
    positional = [name for name, by_position in params if by_position]
    sized = any(name == "size" for name, _ in params)  # a random generator: out sets the result's shape
    found = []
    for i, (name, by_position) in enumerate(params):
        at = i if by_position else None
        if name == "out":
            found.append(Door(name, at, SIZED if sized else OUT, None, None))
        elif name.startswith("overwrite_") or name == "inplace" or name == "copy" and _copies_in_place(fn):
            target = name[len("overwrite_"):] if name.startswith("overwrite_") else None
            index = positional.index(target) if target in positional else 0
            if not positional:
                continue
            kind = SCRAMBLE if name.startswith("overwrite_") else IN_PLACE
            found.append(Door(name, at, kind, index, positional[index]))
    return tuple(found)


def parameters(fn):
    """``[(name, may be passed by position)]`` of ``fn``, from its signature or its docstring's first line; None
    when neither says."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _from_docstring(fn)
    found = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        found.append((p.name, p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)))
    return found


def _from_docstring(fn):
    """numpy's C functions without a signature start their docstring with one: ``fromstring(string, dtype=float,
    count=-1, *, sep, like=None)``, possibly over several lines (``concatenate(\n    (a1, a2, ...),\n    axis=0,
    out=None, ...)`` before numpy 2.3): read up to its closing parenthesis, split at the commas outside brackets."""
    doc = (getattr(fn, "__doc__", None) or "").lstrip()
    match = re.match(r"[\w.]+\(", doc)
    if match is None:
        return None
    parts, token, depth = [], "", 0
    for ch in doc[match.end():]:
        if depth == 0 and ch in ",)":
            parts.append(token.strip())
            token = ""
            if ch == ")":
                break
            continue
        depth += (ch in "([{") - (ch in ")]}")
        token += ch
    else:
        return None  # no closing parenthesis: not a signature
    found, by_position = [], True
    for part in parts:
        name = part.split("=", 1)[0].strip().strip("[]")
        if name == "*":
            by_position = False
        elif name.startswith("("):  # a tuple of operands, (a1, a2, ...): one positional parameter
            found.append(("arrays", by_position))
        elif name and name != "/" and not name.startswith("*") and name.isidentifier():
            found.append((name, by_position))
    return found


def _copies_in_place(fn) -> bool:
    """Whether numpy's description of ``fn``'s ``copy`` says ``copy=False`` replaces values in place
    (``nan_to_num``), rather than returning the input or a view of it (``asarray``, ``reshape``).  Without a
    docstring (``python -OO``) it may."""
    doc = getattr(fn, "__doc__", None)
    if not doc:
        return True
    match = re.search(r"^\s*copy\s*:.*?(?=^\s*\w+\s*:|\Z)", doc, re.S | re.M)
    return match is not None and re.search(r"in[- ]place", match.group(0)) is not None


def method_doors(name) -> tuple[Door, ...]:
    """The doors of ndarray's method ``name`` (``x.cumsum(0, None, y)``), positions counted without ``self``."""
    method = getattr(np.ndarray, name, None)
    if not callable(method):
        return ()
    shift = _self_counted(method)
    return tuple(d._replace(position=None if d.position is None else d.position - shift,
                            target=None if not d.target else d.target - shift) for d in doors(method))


def _self_counted(method) -> int:
    """1 when ``method``'s parameters, as ``doors`` reads them, start with the array itself: its signature
    does; numpy before 2.3 gives some methods none, and their docstring's ``a.clip(min=None, max=None, out=None)``
    names the parameters after the array, so nothing is to be taken off."""
    try:
        inspect.signature(method)
        return 1
    except (TypeError, ValueError):
        return 0 if re.match(r"\w+\.\w+\(", (getattr(method, "__doc__", None) or "").lstrip()) else 1


def ufunc_method(owner, name):
    """``np.add.reduce`` for ``owner`` np.add and ``name`` "reduce", or None."""
    if isinstance(owner, np.ufunc):
        method = getattr(owner, name, None)
        return method if isinstance(method, types.BuiltinFunctionType) else None
    return None


class Written(NamedTuple):
    """A door a call uses: the argument node written into, how, and where it was given."""

    door: Door
    node: object  # the gast node of the argument written into (for OUT: the output itself; None: a method's array)
    position: int | None  # where the door's parameter was given by position (None: by keyword)


def used(found, args, keywords) -> list[Written]:
    """The doors among ``found`` that a call with gast ``args`` and ``keywords`` (``{name: node}``) opens.

    ``out`` is open when given and not ``None``; ``overwrite_*`` and ``inplace`` unless given a literal false
    value; ``copy`` (in place) unless a literal ``True``.
    """
    opened = []
    for door in found:
        if door.parameter in keywords:
            value, at = keywords[door.parameter], None
        elif door.position is not None and door.position < len(args):
            value, at = args[door.position], door.position
        else:
            continue
        literal = getattr(value, "value", _NO) if type(value).__name__ == "Constant" else _NO
        if door.kind in (OUT, SIZED):
            if literal is None:
                continue
            opened.append(Written(door, value, at))
            continue
        if door.parameter == "copy" and literal is True or door.parameter != "copy" and literal is not _NO \
                and not literal:
            continue
        if door.target is not None and door.target < len(args):
            opened.append(Written(door, args[door.target], at))
        elif door.target_name in keywords:
            opened.append(Written(door, keywords[door.target_name], at))
        elif door.target is None:  # an array method's flag: the array it is called on
            opened.append(Written(door, None, at))
    return opened


_NO = object()
