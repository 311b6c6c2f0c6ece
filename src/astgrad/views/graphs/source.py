"""A generated function's data flow as DOT, read from its source.

Each statement of the generated module is a box, labelled with its text;
its parameters are ovals.  An edge runs from the statement that last wrote
a name (every write that may reach, through branches and loops) to each
statement that reads it, labelled with the name; an edge into an earlier
statement (a value from the loop's previous iteration) is dashed.  A call
of a mutating method (``_stack.append``, ``_stack.pop``) or an ``out=``
argument writes its object, so the stack's pushes and pops form a chain.  Statements under a ``# grad of line N``
comment are the adjoint sweep (orange, the comment in their tooltip); the
others are the primal sweep (blue).  Loops and branches are dashed boxes
(clusters) with their header on top; each function of the module is a
cluster of its own, and calls between them are dotted edges to the
callee's parameters and from its returns.

Only the text is read (Python's own ``ast``), so the picture is of the code
that runs, at whatever stage or optimisation level it was generated.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ...transform.ir.compat import unparse
from .dot import Graph, Writer

_LINE_OF = re.compile(r"^\s*# (grad of )?line (\d+): (.*)$")
_PRIMAL, _ADJOINT, _INPUT, _RETURN = "#dbe9f6", "#fde2c8", "white", "darkolivegreen1"
_MUTATING = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
                       "sort", "reverse", "fill", "resize", "put", "itemset", "__setitem__"})
_LONGEST = 60  # characters of a label; the whole statement is its tooltip
_LEGEND = "blue: primal sweep; orange: adjoint sweep"
_FORWARD_LEGEND = "one sweep: each value beside its tangent (forward mode)"
_LOOP_LEGEND = "; dashed edge: from the loop's previous iteration"


def source_graph(source: str) -> Graph:
    tree = ast.parse(source)
    lines = source.splitlines()
    title = lines[0][1:].strip() if lines and lines[0].startswith("#") else "generated code"
    comments = {number: (bool(m.group(1)), f"{m.group(1) or ''}line {m.group(2)}: {m.group(3)}")
                for number, line in enumerate(lines, 1) if (m := _LINE_OF.match(line))}
    legend = _LEGEND if any(grad for grad, _ in comments.values()) else _FORWARD_LEGEND
    legend += _LOOP_LEGEND if any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree)) else ""
    out = Writer("dataflow", {"rankdir": "TB", "label": f"{title}\n{legend}", "labelloc": "t",
                              "fontname": "monospace", "fontsize": "10"},
                 {"shape": "box", "style": "filled", "fontname": "monospace", "fontsize": "10", "height": "0.2"},
                 {"fontname": "monospace", "fontsize": "9"})
    flow = _Flow(out, comments, {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)})
    for function in flow.functions.values():
        flow.layout_function(function)
    for function in flow.functions.values():
        flow.flow_function(function)
    flow.emit_edges()
    name = next(iter(flow.functions), "code")
    return out.graph(f"the data flow of {name}")


class _Flow:
    """Two walks over each function: ``layout`` writes the boxes, ``flow`` finds the edges."""

    def __init__(self, out: Writer, comments: dict, functions: dict):
        self.out = out
        self.comments = comments
        self.functions = functions
        self.made: dict = {}  # id(AST node) -> DOT name
        self.order: dict = {}  # DOT name -> index of creation
        self.params: dict = {}  # function name -> DOT names of its parameters
        self.returns: dict = {}  # function name -> DOT names of its return statements
        self.calls: list = []  # (DOT name of a statement, name of the generated function it calls)
        self.edges: dict = {}  # (tail, head) -> {names}, in the order found
        self.styles: dict = {}  # (tail, head) -> "dotted" for call edges
        self.under: list = []  # (loop or branch header, a statement in it): drawn above it
        self.mutated = {name: _mutated_parameters(f) for name, f in functions.items()}
        self.stacks = {name for f in functions.values() for s in ast.walk(f) if isinstance(s, ast.stmt)
                       for name in _writes(s) - _assigned(s)}  # written into by a method: the stacks

    # -- layout ----------------------------------------------------------------

    def box(self, key: ast.AST, label: str, fill: str, note: str = "", **attrs) -> str:
        """A box for ``key``: its tooltip is the whole ``label``, then ``note`` (the user's line)."""
        name = f"n{len(self.order)}"
        self.order[name] = len(self.order)
        self.made[id(key)] = name
        shown = label if len(label) <= _LONGEST else label[:_LONGEST - 3] + "..."
        tooltip = f"{label}\n({note})" if note else label
        self.out.node(name, label=shown, fillcolor=fill, tooltip=tooltip, **attrs)
        return name

    def sweep(self, stmt: ast.stmt, function: ast.FunctionDef) -> tuple:
        """(fill colour, note): adjoint under a ``# grad of line`` comment of its function, else primal;
        the note is the last ``# [grad of] line N`` comment above it."""
        above = [n for n in self.comments if function.lineno < n < stmt.lineno]
        note = self.comments[max(above)][1] if above else ""
        if any(self.comments[n][0] for n in above):
            return _ADJOINT, note
        if _pops(stmt):
            return _ADJOINT, "restores values the primal sweep saved"
        return _PRIMAL, note

    def layout_function(self, function: ast.FunctionDef) -> None:
        arguments = function.args
        params = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        self.out.open_cluster(label=f"def {function.name}({', '.join(params)})", style="rounded", color="grey")
        self.params[function.name] = [self.box(a, a.arg, _INPUT, shape="ellipse")
                                      for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
        self.returns[function.name] = []
        self.layout(function.body, function)
        self.out.close_cluster()

    def layout(self, body: list, function: ast.FunctionDef) -> None:
        for stmt in body:
            fill, tooltip = self.sweep(stmt, function)
            header = _header(stmt)
            if header is not None:
                self.out.open_cluster(label="", style="dashed", color="grey")
                name = self.box(stmt, header, fill, tooltip, shape="box", style="filled,dashed")
                for block in _blocks(stmt):
                    self.layout(block, function)
                    self.under += [(name, self.made[id(s)]) for s in block if id(s) in self.made]
                self.out.close_cluster()
            elif isinstance(stmt, ast.Return):
                self.returns[function.name].append(self.box(stmt, _text(stmt), _RETURN, tooltip, style="filled,bold"))
            elif not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue, ast.Delete, ast.Global, ast.Nonlocal)):
                name = self.box(stmt, _text(stmt), fill, tooltip)
                self.calls += [(name, callee) for callee in _called(stmt) if callee in self.functions]

    # -- flow ------------------------------------------------------------------

    def flow_function(self, function: ast.FunctionDef) -> None:
        arguments = function.args
        defs = {a.arg: {self.made[id(a)]} for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        self.flow(function.body, defs)

    def read(self, head: str, names: set, defs: dict) -> None:
        for name in sorted(names):
            for tail in sorted(defs.get(name, ()), key=self.order.__getitem__):
                self.edges.setdefault((tail, head), set()).add(name)

    def flow(self, body: list, defs: dict) -> dict:
        """The definitions that may reach the end of ``body`` from ``defs`` at its start; edges on the way."""
        defs = dict(defs)
        for stmt in body:
            if isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        defs.pop(target.id, None)
                continue
            node = self.made.get(id(stmt))
            if node is None:
                continue
            if isinstance(stmt, (ast.For, ast.While)):
                defs = self.loop(stmt, node, defs)
            elif isinstance(stmt, ast.If):
                self.read(node, _reads(stmt.test), defs)
                defs = _merge(self.flow(stmt.body, defs), self.flow(stmt.orelse, defs))
            elif _header(stmt) is not None:  # with, try: their blocks in order, each may run
                self.read(node, _header_reads(stmt), defs)
                for block in _blocks(stmt):
                    defs = _merge(defs, self.flow(block, defs))
            else:
                self.read(node, _reads(stmt), defs)
                for name in _writes(stmt) | self.passed_to_mutate(stmt):
                    defs[name] = {node}
        return defs

    def passed_to_mutate(self, stmt: ast.stmt) -> set:
        """Names a call may write into: a stack passed to any function (a runtime helper popping it), or
        an argument of a generated function that writes that parameter (a callee's pushes)."""
        names = set()
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call):
                continue
            passed = {i: a.id for i, a in enumerate(sub.args) if isinstance(a, ast.Name)}
            names |= {name for name in passed.values() if name in self.stacks}
            if isinstance(sub.func, ast.Name) and sub.func.id in self.mutated:
                names |= {name for i, name in passed.items() if i in self.mutated[sub.func.id]}
        return names

    def loop(self, stmt, node: str, before: dict) -> dict:
        """Reaching definitions around a loop, to a fixed point; the header runs before each iteration."""
        test = stmt.iter if isinstance(stmt, ast.For) else stmt.test
        targets = _target_names(stmt.target) if isinstance(stmt, ast.For) else set()
        current = dict(before)
        while True:
            self.read(node, _reads(test), current)
            entry = dict(current)
            for name in targets:
                entry[name] = {node}
            merged = _merge(before, self.flow(stmt.body, entry))
            if merged == current:
                break
            current = merged
        return _merge(current, self.flow(stmt.orelse, current)) if stmt.orelse else current

    def emit_edges(self) -> None:
        for call, callee in self.calls:
            for param in self.params[callee]:
                self.styles[(call, param)] = "dotted"
                self.edges.setdefault((call, param), set())
            for ret in self.returns[callee]:
                self.styles[(ret, call)] = "dotted"
                self.edges.setdefault((ret, call), set())
        for header, first in self.under:
            self.out.line(f"{header} -> {first} [style=\"invis\"]")
        for (tail, head), names in self.edges.items():
            label = ", ".join(sorted(names))
            if self.styles.get((tail, head)):
                self.out.edge(tail, head, style="dotted", constraint="false")
            elif self.order[tail] >= self.order[head]:
                self.out.edge(tail, head, label=label, style="dashed", constraint="false")
            else:
                self.out.edge(tail, head, label=label)


# ------------------------------------------------------------------ statements


def _text(stmt: ast.stmt) -> str:
    return " ".join(unparse(stmt).split())


def _header(stmt: ast.stmt) -> Optional[str]:
    """The first line of a compound statement (without its colon), or None for a simple one."""
    if isinstance(stmt, ast.For):
        return f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"
    if isinstance(stmt, ast.While):
        return f"while {ast.unparse(stmt.test)}"
    if isinstance(stmt, ast.If):
        return f"if {ast.unparse(stmt.test)}"
    if isinstance(stmt, ast.With):
        return "with " + ", ".join(ast.unparse(item) for item in stmt.items)
    if isinstance(stmt, ast.Try):
        return "try"
    return None


def _header_reads(stmt: ast.stmt) -> set:
    if isinstance(stmt, ast.With):
        return set().union(*(_reads(item.context_expr) for item in stmt.items))
    return set()


def _blocks(stmt: ast.stmt) -> list:
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    return [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]


def _merge(a: dict, b: dict) -> dict:
    return {name: a.get(name, set()) | b.get(name, set()) for name in a.keys() | b.keys()}


def _reads(node: ast.AST) -> set:
    """The names ``node`` reads, less those its comprehensions and lambdas bind themselves."""
    loads, bound = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            loads.add(sub.id)
        elif isinstance(sub, ast.comprehension):
            bound |= _target_names(sub.target)
        elif isinstance(sub, ast.Lambda):
            bound |= {a.arg for a in sub.args.posonlyargs + sub.args.args + sub.args.kwonlyargs}
    if isinstance(node, ast.AugAssign):
        loads |= _target_names(node.target)
    return loads - bound


def _target_names(target: ast.AST) -> set:
    """The local names an assignment to ``target`` writes (``x[i] = v`` and ``x.a = v`` write ``x``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Subscript, ast.Attribute)):
        return _target_names(target.value)
    return set()


def _writes(stmt: ast.stmt) -> set:
    """The names a simple statement writes: its targets, the object of a mutating method, ``out=``."""
    written = set()
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            written |= _target_names(target)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        written |= _target_names(stmt.target)
    for sub in ast.walk(stmt):
        if not isinstance(sub, ast.Call):
            continue
        func = sub.func
        if isinstance(func, ast.Attribute) and func.attr in _MUTATING and isinstance(func.value, ast.Name):
            written.add(func.value.id)
        for keyword in sub.keywords:
            if keyword.arg == "out":
                written |= _target_names(keyword.value)
    return written


def _pops(stmt: ast.stmt) -> bool:
    return any(isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "pop"
               for sub in ast.walk(stmt))


def _mutated_parameters(function: ast.FunctionDef) -> set:
    """Positions of the parameters ``function`` writes into (a stack it pushes onto or pops from)."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    written = set()
    for stmt in ast.walk(function):
        if isinstance(stmt, ast.stmt) and not isinstance(stmt, ast.FunctionDef):
            written |= {name for name in _writes(stmt) if name in params} - _assigned(stmt)
    return {params.index(name) for name in written}


def _assigned(stmt: ast.stmt) -> set:
    """Names a statement rebinds (``x = ...``), as opposed to writing into (``x.append``)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _called(stmt: ast.stmt) -> list:
    """Names of the plain functions the statement calls, in order."""
    return [sub.func.id for sub in ast.walk(stmt) if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)]
