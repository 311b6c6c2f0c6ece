"""The containers ``torch.func`` looks into: tuples, lists, dicts and named tuples, nested.

Anything else is a leaf (a Tensor, a number, ``None``...), as in PyTorch's
pytrees.  A structure is a hashable description compared with ``==``;
``spec_text`` prints it as PyTorch's ``treespec_pprint`` does (``*`` for a
leaf: ``(*, [*, *])``, ``{'w': *}``), ``spec_repr`` as a ``TreeSpec`` prints.
"""

from __future__ import annotations

LEAF = None


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_container(value) -> bool:
    return isinstance(value, (tuple, list, dict))


def children(tree) -> tuple:
    """``(children, context)`` of a container: dict keys in their order, a named tuple's class."""
    if isinstance(tree, dict):
        return tuple(tree.values()), ("dict", tuple(tree.keys()))
    if _is_namedtuple(tree):
        return tuple(tree), ("namedtuple", type(tree))
    return tuple(tree), (type(tree).__name__, None)


def rebuild(context, items):
    kind, extra = context
    if kind == "dict":
        return dict(zip(extra, items))
    if kind == "namedtuple":
        return extra(*items)
    return tuple(items) if kind == "tuple" else list(items)


def flatten(tree) -> tuple:
    """``(leaves, structure)``: the leaves in order, and what ``unflatten`` needs to put them back."""
    leaves: list = []

    def visit(node):
        if not is_container(node):
            leaves.append(node)
            return LEAF
        items, context = children(node)
        return context, tuple(visit(item) for item in items)

    structure = visit(tree)
    return leaves, structure


def unflatten(structure, leaves):
    """The tree of ``structure`` with ``leaves`` in order."""
    it = iter(leaves)

    def build(spec):
        if spec is LEAF:
            return next(it)
        context, subs = spec
        return rebuild(context, [build(s) for s in subs])

    return build(structure)


def tree_map(fn, tree):
    leaves, structure = flatten(tree)
    return unflatten(structure, [fn(leaf) for leaf in leaves])


class _Star:
    def __repr__(self) -> str:
        return "*"


def spec_text(structure) -> str:
    """PyTorch's ``treespec_pprint``: the tree printed with ``*`` for each leaf."""
    return repr(unflatten(structure, [_Star()] * count_leaves(structure)))


def spec_repr(structure, indent: int = 0) -> str:
    """PyTorch's ``TreeSpec`` repr: ``TreeSpec(tuple, None, [*,\n  *])``, children on lines indented by depth."""
    if structure is LEAF:
        return "*"
    (kind, extra), subs = structure
    context = list(extra) if kind == "dict" else extra
    indent += 2
    children = [spec_repr(s, indent) for s in subs]
    return f"TreeSpec({kind}, {context}, [" + \
        ("," + "\n" + " " * indent).join(children) + "])"


def count_leaves(structure) -> int:
    if structure is LEAF:
        return 1
    return sum(count_leaves(s) for s in structure[1])


def broadcast_prefix(prefix, tree, is_leaf_value):
    """``prefix`` spread over ``tree``'s leaves: a value where ``is_leaf_value`` says so covers a whole subtree.

    Returns the list of values, one per leaf of ``tree``, or ``None`` when
    ``prefix`` is not a prefix of ``tree``'s structure (PyTorch's in_dims
    and out_dims).
    """
    out: list = []

    def visit(p, node) -> bool:
        if is_leaf_value(p):
            out.extend([p] * len(flatten(node)[0]))
            return True
        if not is_container(p) or not is_container(node):
            return False
        p_items, p_context = children(p)
        n_items, n_context = children(node)
        if p_context[0] != n_context[0] and not (p_context[0] in ("tuple", "namedtuple") and
                                                   n_context[0] in ("tuple", "namedtuple")):
            return False
        if p_context[0] == "dict" and set(p_context[1]) != set(n_context[1]):
            return False
        if p_context[0] == "dict":
            p_items = tuple(p[k] for k in n_context[1])
        if len(p_items) != len(n_items):
            return False
        return all(visit(a, b) for a, b in zip(p_items, n_items))

    return out if visit(prefix, tree) else None
