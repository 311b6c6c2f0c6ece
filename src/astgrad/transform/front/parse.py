"""Parse a function's source and resolve the names it refers to.

``FunctionSource`` holds the gast tree of one user function together with
where it came from (so errors can point at the user's file and line) and a
resolver that maps each free name to the Python object it denotes now:
closure cells, the function's globals, then builtins.
"""

from __future__ import annotations

import builtins
import types

from ...rules import _registry
from ..ir import compat
from ..ir.compat import gast
from ..ir.errors import TransformError, UnsupportedSyntaxError
from .locate import locate

_MISSING = object()


class FunctionSource:
    """One user function: its tree, origin and name resolution."""

    _fork_shares = ("fn", "globals", "closure", "lines")  # the user's objects: never copied (ir/forks.py)

    def __init__(self, fn):
        self.fn = fn
        code = getattr(fn, "__code__", None)
        if code is None:
            raise TypeError(f"astgrad: {fn!r} is not a Python function")
        found = locate(fn)  # the text of fn.__code__ itself: never __wrapped__'s, never an edited file's
        self.filename = found.filename
        self.lines = found.lines  # the whole file: a node's lineno is its line in the file
        self.first_line = 1
        self.tree = self._find_def(compat.from_ast(found.node), fn)
        if found.class_name:
            _mangle(self.tree, found.class_name)
        self.closure = {}
        if fn.__closure__:
            self.closure = dict(zip(code.co_freevars, fn.__closure__))
        self.globals = fn.__globals__
        self.dependencies = Dependencies()
        self.dependencies.record_attr(fn, "__code__", code, always=True)

    def _find_def(self, node, fn):
        if isinstance(node, gast.AsyncFunctionDef):
            raise self.error(node, "async functions cannot be differentiated",
                             "Write a plain `def` function.", UnsupportedSyntaxError)
        if isinstance(node, gast.Lambda):
            body = [compat.make("Return", value=node.body, lineno=node.lineno, col_offset=node.col_offset)]
            return compat.make("FunctionDef", name=fn.__name__, args=node.args, body=body, decorator_list=[],
                               lineno=node.lineno, col_offset=node.col_offset)
        return node

    # -- locations -----------------------------------------------------

    def location(self, node):
        """(line in the file, column, text of that source line)."""
        line = getattr(node, "lineno", None) or 1
        col = getattr(node, "col_offset", None) or 0
        text = self.lines[line - 1].rstrip("\r\n") if 0 < line <= len(self.lines) else ""
        return line, col, text

    def user_line(self, node) -> int:
        return self.location(node)[0]

    def line_text(self, node) -> str:
        return self.location(node)[2].strip()

    def error(self, node, message, hint="", kind=TransformError):
        line, col, text = self.location(node)
        return kind(message, self.filename, line, col, text, hint)

    # -- names -----------------------------------------------------------

    def resolve(self, identifier: str):
        """The object a free name denotes, or ``_MISSING``."""
        if identifier in self.closure:
            try:
                value = self.closure[identifier].cell_contents
            except ValueError:
                return _MISSING
            self.dependencies.record_cell(self.closure[identifier], value)
            return value
        if identifier in self.globals or identifier in getattr(self.globals, "live", ()):
            value = self.globals[identifier]  # generated code's globals read the user's data live (namespace.py)
            self.dependencies.record_key(self.globals, identifier, value)
            return value
        # a builtin, until a global of that name appears (``abs = np.square`` later in the module)
        self.dependencies.record_absent(self.globals, identifier)
        return getattr(builtins, identifier, _MISSING)

    def live_source(self, identifier: str):
        """Where to read a free data name at call time: a cell or a dict."""
        if identifier in self.closure:
            return self.closure[identifier]
        if identifier in self.globals or identifier in getattr(self.globals, "live", ()):
            return self.globals
        return None

    def resolve_expr(self, node, local_names):
        """Resolve ``np.linalg.norm``-style chains of free names statically."""
        if isinstance(node, gast.Name):
            if node.id in local_names:
                return _MISSING
            return self.resolve(node.id)
        if isinstance(node, gast.Attribute):
            base = self.resolve_expr(node.value, local_names)
            if base is _MISSING:
                return _MISSING
            if not isinstance(base, (types.ModuleType, type)):
                return self._library_method(node, base, local_names)
            value = getattr(base, node.attr, _MISSING)
            if value is not _MISSING:
                self.dependencies.record_attr(base, node.attr, value)
            return value
        return _MISSING


    def _library_method(self, node, base, local_names):
        """``norm.cdf`` with ``norm`` a library's object (``scipy.stats.norm``): the bound method, a callable
        the rule table may hold, where a method of a user's value would be anything at run time.

        Only a plain function defined on the object's class is resolved (no
        property runs, no instance attribute shadows it).  The generated code
        binds the method, so the name that held the object and the class's
        function are both recorded: rebinding either builds the gradient again.
        """
        cls = type(base)
        if not _registry.library_function(getattr(cls, node.attr, None)) or node.attr in getattr(base, "__dict__", {}):
            return _MISSING
        function = getattr(cls, node.attr)
        self.dependencies.record_attr(cls, node.attr, function, always=True)
        holder = node.value
        if isinstance(holder, gast.Name):
            source = self.live_source(holder.id)
            if isinstance(source, dict):
                self.dependencies.record_key(source, holder.id, base, always=True)
            elif source is not None:  # a closure cell, recorded whatever it holds
                self.dependencies.entries[("cell", id(source), None)] = (source, None, base)
        elif isinstance(holder, gast.Attribute):
            owner = self.resolve_expr(holder.value, local_names)
            if owner is _MISSING:
                return _MISSING
            self.dependencies.record_attr(owner, holder.attr, base, always=True)
        else:
            return _MISSING
        return types.MethodType(function, base)


class Dependencies:
    """Everything a transform read once and built into the generated code, to notice a change.

    Names that resolved to callables, classes and modules (the generated code
    binds those objects), a name that resolved to a builtin (a global of that
    name may appear), each function's code and defaults, the rule table, and
    the globals an inlined rule reads.  Data read from globals and closures is
    looked up live by the generated code, so rebinding a global weight needs
    no new transform and is not recorded.  ``current()`` checks the entries in
    a loop; ``test_source`` gives the same tests as one expression for
    generated callers to inline.  Every test is ``is``: an entry holds the
    object it saw, so a place changed and changed back is still current.
    """

    def __init__(self):
        self.entries: dict = {}

    def __fork__(self, copy, memo):
        """A copy recording the same entries, of the same objects (ir/forks.py)."""
        made = memo[id(self)] = Dependencies()
        made.entries = dict(self.entries)
        return made

    def record_key(self, mapping, key, value, *, always=False):
        if always or _code_like(value):
            self.entries[("key", id(mapping), key)] = (mapping, key, value)

    def record_absent(self, mapping, key):
        """``key`` is not in ``mapping`` (a name found among the builtins instead)."""
        self.record_key(mapping, key, _MISSING, always=True)

    def record_cell(self, cell, value, *, always=False):
        if always or _code_like(value):
            self.entries[("cell", id(cell), None)] = (cell, None, value)

    def record_attr(self, obj, name, value, *, always=False):
        if always or _code_like(value):
            self.entries[("attr", id(obj), name)] = (obj, name, value)

    def record_defaults(self, fn):
        """``fn.__defaults__`` (a tuple, replaced to change) and each keyword-only default.

        For a callee, whose generated forward function has them as defaults;
        the entry function has none (the gradient binds ``f``'s at each call).
        """
        self.record_attr(fn, "__defaults__", fn.__defaults__, always=True)
        if not fn.__code__.co_kwonlyargcount:
            return
        kwdefaults = fn.__kwdefaults__
        self.record_attr(fn, "__kwdefaults__", kwdefaults, always=True)
        for name, value in (kwdefaults or {}).items():  # the dict can change in place
            self.record_key(kwdefaults, name, value, always=True)

    def record_rule_table(self):
        """The rule table as it is: any ``defvjp`` or ``defnondiff`` later makes this out of date."""
        self.record_attr(_registry, "version", _registry.version, always=True)

    def update(self, other):
        self.entries.update(other.entries)

    def test_source(self, namespace: dict) -> str:
        """``current()`` as one Python expression, for code generated around a transform.

        One test per recorded name, such as ``_dep3.sum is _dep4`` for ``np.sum``;
        the objects are bound in ``namespace`` under names starting ``_dep``.
        A name that is gone raises AttributeError (KeyError for a dict's key,
        ValueError for an emptied closure cell), which the caller catches and
        reads as "not current".  A key of a plain dict is read as a subscript
        (half the cost of ``.get``); a key recorded absent, or of a dict
        subclass (whose ``__missing__`` a subscript would call), with ``.get``.
        """
        from keyword import iskeyword

        def bind(obj):
            name = f"_dep{len(namespace)}"
            namespace[name] = obj
            return name

        tests = []
        for (kind, _, _), (place, key, value) in self.entries.items():
            if kind == "key":  # a dict such as the function's globals
                key_text = repr(key) if type(key) is str else bind(key)
                read = (f"{bind(place)}[{key_text}]" if value is not _MISSING and type(place) is dict
                        else f"{bind(place)}.get({key_text}, {bind(_MISSING)})")
            elif kind == "cell":
                read = f"{bind(place)}.cell_contents"
            elif key.isidentifier() and not iskeyword(key):
                read = f"{bind(place)}.{key}"
            else:
                read = f"getattr({bind(place)}, {bind(key)}, {bind(_MISSING)})"
            tests.append(f"{read} is {bind(value)}")
        return " and ".join(tests) or "True"

    def current(self) -> bool:
        """Whether every recorded name still denotes the object it did at transform time.

        A loop over the entries: ``grad(f)`` asks once per call of ``grad``,
        where compiling ``test_source`` would cost more than it saves (the
        compiled entry of a GradientFunction inlines it for every gradient).
        """
        for (kind, _, _), (place, key, value) in self.entries.items():
            if kind == "key":
                now = place.get(key, _MISSING)
            elif kind == "cell":
                try:
                    now = place.cell_contents
                except ValueError:
                    now = _MISSING
            else:
                now = getattr(place, key, _MISSING)
            if now is not value:
                return False
        return True


def _mangle(tree, class_name) -> None:
    """Rename ``__x`` to ``_Class__x`` as Python does for code written in a class body."""
    owner = class_name.lstrip("_")
    if not owner:
        return

    def mangled(identifier):
        if identifier and identifier.startswith("__") and not identifier.endswith("__"):
            return f"_{owner}{identifier}"
        return identifier

    for node in gast.walk(tree):
        if isinstance(node, gast.Name):
            node.id = mangled(node.id)
        elif isinstance(node, gast.Attribute):
            node.attr = mangled(node.attr)
        elif isinstance(node, gast.keyword):
            node.arg = mangled(node.arg)


def _code_like(value) -> bool:
    """What generated code binds at transform time instead of reading at call time (normalize.load_name)."""
    return callable(value) or isinstance(value, types.ModuleType)


MISSING = _MISSING
