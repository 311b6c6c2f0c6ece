"""Jacobians and hessians from generated vector-Jacobian products.

``jacobian(f)`` calls the generated ``vjp`` of ``f`` along each element of
the output, with that element's basis vector as seed, and stacks the rows:
the result has the output's shape, then the input's (as in JAX and HIPS
autograd).  ``jacfwd`` stacks generated jvps over the input's basis vectors.
``hessian(f)`` applies the forward sweep to the code ``grad(f)`` generates
(forward over reverse, see higher.py), one jvp per input element; ``hvp`` is
one such jvp along ``v``: no hessian is built.  ``jacfwd`` and ``hessian``
run every basis vector in one call of that jvp batched over its tangent,
``jacobian`` in one call of the vjp batched over its seed (directions.py),
where the batching sweep accepts the code, and one call per vector where it
does not; ``.batched`` says which ran last.  Complex Jacobians of holomorphic
functions (``holomorphic=True``) are holomorphic.py's.

Long: the derivatives built from the generated products share their
argument checks, the walk over each argument's basis directions and the
assembly of blocks in JAX's nesting; split, each would import the others.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..values import dask as _dask, trees as _trees
from . import gradient, holomorphic as complex_jacobians
from .forward import gradient_code, jvp
from .directions import (Directions, Shown, basis, from_columns, jacfwd_batched, jacrev_batched,
                         jacrev_of_gradient_batched)
from .generated import GeneratedCallable
from .pullback import copied, pullback_at, splittable
from ..values.returned import _finish
from ..values.trees import has_gradient, is_tree
from ..transform.runtime.caller_state import repeating
from ..transform.runtime.tangents import zero_tangent

__all__ = ["jacobian", "jacrev", "jacfwd", "hessian", "hvp", "elementwise_grad", "make_ggnvp"]


class Composed(GeneratedCallable):
    """A composed transformation: called like ``f``; ``.source`` is the generated code it runs."""

    def __init__(self, f, name, run, generated, directions=()):
        self.__wrapped__ = f
        self.__name__ = f"{name}_{getattr(f, '__name__', 'f')}"
        self.__qualname__ = f"{name}({getattr(f, '__qualname__', f)})"
        self.__doc__ = f"astgrad.{name} of {getattr(f, '__qualname__', f)}, by generated code."
        self._run, self._name = run, name
        self._generated = generated  # the generated transformations it calls
        self._directions = directions  # the Directions that run every direction of a product in one sweep

    def __call__(self, *args, **kwargs):
        with repeating(self._name):  # it runs f's generated code more than once: no write into caller's dicts
            return self._run(*args, **kwargs)

    @property
    def source(self) -> str:
        """The generated code of the transformations this one calls (as of the last call)."""
        return "\n".join(g.source for g in self._generated)

    @property
    def batched(self) -> bool | None:
        """Whether the last call ran every direction in one batched sweep (``jacobian``, ``jacfwd``, ``hessian``).

        True: one call of batched generated code gave every column (then
        ``.source`` is that code); False: a loop of one product per column,
        where the code is not batched (see docs/transformations.md); None:
        not called yet, or a transformation without a batched form.
        """
        found = [d.batched for d in self._directions]
        return None if not found or None in found else all(found)

    def __repr__(self):
        return f"<astgrad.{self.__qualname__}>"


def _output_shape(f, args, kwargs, what):
    """The shape of ``f(*args, **kwargs)``, which must be one real number or array."""
    return _shape_of_output(f(*args, **kwargs), f, what)


def _shape_of_output(out, f, what):
    if is_tree(out):
        raise TypeError(f"astgrad.{what}: {getattr(f, '__qualname__', f)} returns a {type(out).__name__}; {what} "
                        f"takes a function returning one array or number (return np.concatenate of the parts, or "
                        f"take the {what} of each part)")
    if np.iscomplexobj(out):
        raise TypeError(f"astgrad.{what}: {getattr(f, '__qualname__', f)} returns complex values; {what} is for "
                        f"real functions (differentiate the real and imaginary parts)")
    return np.shape(out)


def _checked(value, what, wrt):
    """``value``, an argument ``wrt`` names: an array, a number, or dicts, lists and tuples of them, all real."""
    if type(value) is float or type(value) is np.ndarray and value.dtype.kind != "c":
        return value  # the common case, without the walk (hvp checks at every call)
    for path, leaf in _trees.leaves(value):
        if has_gradient(leaf) and np.iscomplexobj(leaf):
            where = f"{wrt!r}{_trees.path_text(path)}"
            raise TypeError(f"astgrad.{what}: the argument {where} is complex; {what} is for real inputs. Pass the "
                            f"real and imaginary parts as two real arguments (x = re + 1j * im inside f) and take the "
                            f"{what} with respect to both: wrt=(re, im)")
    return value


def _map_paths(fn, tree):
    """``fn(path, leaf)`` for each leaf of ``tree``, in a tree of its structure (``fn((), x)`` for an array)."""
    return _trees.rebuild(tree, iter([fn(path, leaf) for path, leaf in _trees.leaves(tree)]))


def _directions(x):
    """``(path, direction)`` for each element of each leaf of ``x`` that has a derivative, in order.

    ``direction`` has ``x``'s structure: the basis vector of that element at
    ``path``, zeros at every other leaf (``None`` where a leaf has none).
    """
    zero = _zero(x)
    for path, leaf in _trees.leaves(x):
        if not _trees.differentiated(path, leaf):
            continue
        for index in np.ndindex(*np.shape(leaf)):
            u = np.zeros(np.shape(leaf))
            u[index] = 1.0
            yield path, _trees.replace(zero, path, u if isinstance(leaf, np.ndarray) else float(u))


def _assemble(outer, inner, columns):
    """The derivative of a value shaped like ``outer`` along the elements of ``inner``, as JAX nests it.

    ``columns`` lists ``(path, value)`` in the order of :func:`_directions`
    of ``inner``: the derivative's value (``outer``'s structure) along each
    element.  The result has ``outer``'s structure; its leaf ``a`` has
    ``inner``'s structure, whose leaf ``b`` is an array of shape
    ``a.shape + b.shape``.  A leaf without a derivative is ``None``.
    """
    along: dict = {}
    for path, value in columns:
        along.setdefault(path, []).append(value)

    def leaf_of_outer(path_a, a):
        if not is_tree(outer) or _trees.differentiated(path_a, a):
            return _map_paths(lambda path_b, b: block(path_a, a, path_b, b), inner)
        return None

    def block(path_a, a, path_b, b):
        if path_b not in along:  # a leaf without a derivative, or one without elements: JAX's (a.shape + (0,))
            return np.zeros(np.shape(a) + np.shape(b)) if has_gradient(b) and np.size(b) == 0 else None
        parts = [_dask.broadcast_to(_trees.get(value, path_a), np.shape(a)) for value in along[path_b]]
        return _dask.stack(parts, axis=-1).reshape(np.shape(a) + np.shape(b))

    return _map_paths(leaf_of_outer, outer)


def jacobian(f, wrt=0, *, has_aux: bool = False, holomorphic: bool = False, optimize: int | None = None):
    """The Jacobian of ``f`` by reverse mode: one generated vjp per output element.

    ``jacobian(f)(*args)`` has shape ``f(*args).shape + x.shape`` for the
    argument ``x`` named by ``wrt``; a tuple ``wrt`` gives one such array per
    argument.  An argument holding dicts, lists and tuples of arrays gets
    its structure back, each leaf ``a`` of shape ``f(*args).shape + a.shape``
    (as ``jax.jacrev``).  The arguments are real.  ``f`` returns one real
    array or number (``f`` runs once more for its output's shape), or, for
    a Python function, dicts, lists and tuples of them: the Jacobian then
    has the output's structure, each leaf holding the blocks described
    above (JAX's nesting), from one forward sweep and its pullback
    (``astgrad.vjp(f, *args)``).  With ``has_aux=True``, ``f`` returns
    ``(output, aux)`` and the result is ``(jacobian, aux)``.  For a Python
    function of arrays and numbers, every row comes from one call of the vjp
    batched over its seed where its code is batched (``.batched``, as for
    :func:`hessian`).  With ``holomorphic=True``, ``f`` takes and returns
    complex arrays and is holomorphic in them: the result is the complex
    matrix of ``d f_i / d z_j`` (JAX's), refused at a point where ``f`` is
    not holomorphic.
    """
    complex_jacobians.check_options(holomorphic, has_aux, "jacobian")
    single = not isinstance(wrt, (tuple, list))
    product = gradient.vjp(f, wrt, optimize=optimize)
    signature = inspect.signature(f)
    level = gradient._level(optimize, "jacobian")
    directions = Directions(level)
    of_gradient = gradient._composable(f)
    forward = _forward_over_gradient(f, wrt, optimize, directions)

    def run(*args, **kwargs):
        directions.batched = False
        if holomorphic:
            names, given = _given(f, signature, wrt, args, kwargs)
            return complex_jacobians.reverse_rows(f, product, names, given, single, args, kwargs)
        names, inputs = _inputs(f, signature, wrt, args, kwargs, "jacobian")
        if has_aux:
            return _by_pullback(f, names, inputs, single, args, kwargs, True, optimize, "jacobian")
        out = f(*args, **kwargs)
        if is_tree(out) and splittable(f):
            return _by_pullback(f, names, inputs, single, args, kwargs, False, optimize, "jacobian")
        out_shape = _shape_of_output(out, f, "jacobian")
        if of_gradient:
            jac = jacrev_of_gradient_batched(f, wrt, level, directions, args, kwargs, inputs, out_shape)
            if jac is None and forward is not None:
                jac = forward.block(args, kwargs, inputs[0])
        else:
            jac = jacrev_batched(f, wrt, level, directions, args, kwargs, inputs, out_shape)
        if jac is not None:
            return jac[0] if single else jac
        rows = []
        for index in np.ndindex(*out_shape):
            seed = np.zeros(out_shape)
            seed[index] = 1.0
            row = product(*args, seed, **kwargs)
            rows.append((row,) if single else row)
        blocks = tuple(_map_paths(lambda path, leaf, i=i, x=x: _stacked_rows([_trees.get(r[i], path) for r in rows],
                                                                               out_shape, leaf)
                                  if not is_tree(x) or _trees.differentiated(path, leaf) else None, x)
                       for i, x in enumerate(inputs))
        return blocks[0] if single else blocks

    if has_aux and not splittable(f):
        raise TypeError(f"astgrad.jacobian(..., has_aux=True) of {getattr(f, '__qualname__', f)!r}: has_aux is "
                        f"supported for plain Python functions; wrap it: def g(*args): return f(*args)")
    return Composed(f, "jacobian", run, [Shown(product, directions)], [directions])


def _by_pullback(f, names, inputs, single, args, kwargs, has_aux, optimize, what):
    """The Jacobian of ``f`` (a tree of blocks for a tree output) from one pullback, one cotangent per output
    element; ``(jacobian, aux)`` with ``has_aux``."""
    out, vjp_fn, aux = pullback_at(f, args, kwargs, names, has_aux, optimize)
    tree = is_tree(out)
    for path, leaf in _trees.leaves(out):
        if np.iscomplexobj(leaf):
            _shape_of_output(leaf, f, what)  # refused: real functions only
    zero = _map_paths(lambda path, leaf: np.zeros(np.shape(leaf)) if isinstance(leaf, np.ndarray) else 0.0, out)
    rows: dict = {}
    for path, leaf in _trees.leaves(out):
        if tree and not _trees.differentiated(path, leaf):
            continue
        for index in np.ndindex(*np.shape(leaf)):
            e = np.zeros(np.shape(leaf))
            e[index] = 1.0
            seed = _trees.replace(zero, path, e if isinstance(leaf, np.ndarray) else float(e))
            rows.setdefault(path, []).append(vjp_fn(seed))

    def leaf_of_out(path_a, a):
        if tree and not _trees.differentiated(path_a, a):
            return None
        found = rows.get(path_a, [])
        blocks = tuple(_map_paths(lambda path_b, b, i=i, x=x: _stacked_rows([_trees.get(r[i], path_b) for r in found],
                                                                             np.shape(a), b)
                                  if not is_tree(x) or _trees.differentiated(path_b, b) else None, x)
                       for i, x in enumerate(inputs))
        return blocks[0] if single else blocks

    jac = _map_paths(leaf_of_out, out)
    return (jac, aux) if has_aux else jac


def _stacked_rows(rows, out_shape, leaf):
    """Rows (one per output element, each of the leaf's shape) as one array of shape out + leaf."""
    if not rows:  # an output without elements: JAX's zeros of shape (0,) + leaf
        return np.zeros(out_shape + np.shape(leaf))
    return _dask.stack([_dask.broadcast_to(r, np.shape(leaf)) for r in rows], axis=0).reshape(out_shape + np.shape(leaf))


def _inputs(f, signature, wrt, args, kwargs, what):
    """The names ``wrt`` gives and the (checked) arguments they name in this call."""
    names, given = _given(f, signature, wrt, args, kwargs)
    return names, [_checked(value, what, name) for name, value in zip(names, given)]


def _given(f, signature, wrt, args, kwargs):
    """The names ``wrt`` gives and the arguments they name in this call."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    names, _ = gradient._wrt_names(f, signature, wrt)
    return names, [bound.arguments[name] for name in names]



#: the reverse-mode jacobian, by its JAX name
jacrev = jacobian


def jacfwd(f, wrt=0, *, has_aux: bool = False, holomorphic: bool = False, optimize: int | None = None):
    """The Jacobian of ``f`` by forward mode: one generated jvp per input element.

    The same result as :func:`jacobian` (shape ``f(*args).shape + x.shape``,
    a tuple of them for a tuple ``wrt``, an argument's structure for dicts,
    lists and tuples; for an output holding dicts, lists and tuples, the
    output's structure of those), cheaper when the input is smaller than
    the output: its cost grows with the input's size, not the output's.
    With ``has_aux=True``, ``f`` returns ``(output, aux)`` and the result is
    ``(jacobian, aux)``.  For arrays and numbers, every column comes from one
    call of the jvp batched over its tangents where its code is batched
    (``.batched``, as for :func:`hessian`).  ``holomorphic=True``: as for
    :func:`jacobian`, one complex column per element of the complex input.
    """
    complex_jacobians.check_options(holomorphic, has_aux, "jacfwd")
    single = not isinstance(wrt, (tuple, list))
    product = jvp(f, wrt, optimize=optimize)
    signature = inspect.signature(f)
    directions = Directions(gradient._level(optimize, "jacfwd"))
    forward = _forward_over_gradient(f, wrt, optimize, directions)

    def run(*args, **kwargs):
        directions.batched = False
        if holomorphic:
            names, given = _given(f, signature, wrt, args, kwargs)
            return complex_jacobians.forward_columns(f, product, names, given, single, args, kwargs)
        names, inputs = _inputs(f, signature, wrt, args, kwargs, "jacfwd")
        if not has_aux:
            if forward is not None:
                jac = forward.block(args, kwargs, inputs[0])
            else:
                jac = jacfwd_batched(f, product, directions, args, kwargs, inputs, _shape_of_output)
            if jac is not None:
                return jac[0] if single else jac
        zeros = [_zero(x) for x in inputs]
        blocks, aux = [], None
        for i, x in enumerate(inputs):
            columns, value = [], None
            for path, direction in _directions(x):
                tangents = direction if single else tuple(direction if j == i else z for j, z in enumerate(zeros))
                value, tangent = product(*args, tangents, **kwargs)
                if has_aux:
                    (value, aux), tangent = _pair(value, f), tangent[0]
                columns.append((path, tangent))
            if value is None:  # nothing to differentiate along: f's value for the output's shape
                value = f(*args, **kwargs)
                if has_aux:
                    value, aux = _pair(value, f)
            for _, leaf in _trees.leaves(value):
                _shape_of_output(leaf, f, "jacfwd")  # real values only
            blocks.append(_assemble(value, x, columns))
        if single:
            jac = blocks[0]
        elif is_tree(value):  # JAX's nesting: the output's structure, then one block per wrt argument
            jac = _map_paths(lambda path, leaf: tuple(_trees.get(b, path) for b in blocks)
                             if _trees.differentiated(path, leaf) else None, value)
        else:
            jac = tuple(blocks)
        return (jac, aux) if has_aux else jac

    return Composed(f, "jacfwd", run, [Shown(product, directions)], [directions])


def _pair(value, f):
    """``(output, aux)``, what a function differentiated with ``has_aux`` must return."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise TypeError(f"astgrad: has_aux=True: {getattr(f, '__qualname__', f)} must return a pair (output, aux); "
                        f"it returned {type(value).__name__}")
    return value


def _zero(x):
    """The zero tangent of ``x`` (``None`` at leaves without a derivative)."""
    return _map_paths(lambda path, leaf: zero_tangent(leaf) if _trees.differentiated(path, leaf) else None, x)


class _GradientTangent:
    """``H v``: the generated jvp of the code ``grad(f, wrt)`` generates, along ``v`` for the argument ``along``.

    Forward over reverse: the gradient's generated code (optimize=1, see
    higher.py) transformed by the forward sweep.  ``.source`` is that jvp.
    An argument ``wrt`` names that holds dicts, lists or tuples is
    differentiated through the gradient's code for containers; the result
    has its structure (zeros where the code gave no gradient).
    """

    def __init__(self, f, wrt, along, optimize):
        self._gradient = gradient.grad(f, wrt, optimize=1)
        self._wrt, self._along, self._level, self._last = wrt, along, optimize, None
        self._signature = signature = inspect.signature(f)
        params = list(signature.parameters.values())
        # positional calls reaching the argument read it without Signature.bind (hvp's per-call cost)
        self._plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self._params = [p.name for p in params]
        self._directions = Directions(gradient._level(optimize, "hessian"))  # every column in one sweep

    def __call__(self, args, kwargs, v, what="hvp"):
        return self.at(args, kwargs, what)(v)

    def at(self, args, kwargs, what="hessian"):
        """``v -> H v`` at these arguments: the generated code looked up once for many ``v``."""
        value, trees, product, args, kwargs = self._product(args, kwargs, what)
        if trees:  # the tangent of a dict's gradient holds the keys that got one: the others are zeros
            return lambda v: _finish(product(*args, v, **kwargs)[1], value)
        return lambda v: product(*args, v, **kwargs)[1]

    def block(self, args, kwargs, x):
        """``(d grad / d x,)``: ``H v`` for every basis vector ``v`` of ``x`` (the argument ``along``), from one
        call of the jvp's code batched over its tangent, as one array of shape ``row.shape + x.shape`` (the
        argument ``wrt`` names is ``row``); None where that code is not batched."""
        value, trees, product, args, kwargs = self._product(args, kwargs, "hessian")
        self._directions.batched = False
        if trees or is_tree(x) or product._refused is not None or not np.size(x):
            return None
        found = self._directions.run(product._as_callee()[0], product.__astgrad_function__, args, kwargs,
                                     [basis(x)])
        return None if found is None else (from_columns(found[1], value, x),)

    def _product(self, args, kwargs, what):
        """``(value, trees, product, args, kwargs)``: the argument differentiated, the set of names of those
        holding containers, the generated jvp of the gradient's code, and what it is called with: every
        argument, defaults included (the gradient's code has none of ``f``'s defaults)."""
        name = self._gradient.wrt[0]
        if self._plain and len(args) == len(self._params) and not kwargs:
            value = args[self._params.index(name)]
        else:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            value, args, kwargs = bound.arguments[name], bound.args, bound.kwargs
        _checked(value, what, name)
        trees = frozenset((name,)) if is_tree(value) else frozenset()
        function, constants = gradient_code(self._gradient, trees)
        defaults = function.__kwdefaults__ or {}
        constants = {k: c for k, c in constants.items() if k not in defaults or defaults[k] != c}
        self._last = product = jvp(function, self._along, optimize=self._level)
        return value, trees, product, args, {**kwargs, **constants}

    @property
    def source(self) -> str:
        if self._directions.batched:
            return self._directions.source
        return self._last.source if self._last is not None else ""


def _forward_over_gradient(f, wrt, optimize, directions):
    """For ``jacobian`` or ``jacfwd`` of ``grad(g)`` (a generated gradient of one argument, the Jacobian along
    one): hessian's block of ``g`` for those arguments, whose every column runs in one batched call, sharing
    ``directions``; None for anything else.  ``jacobian(grad(g))`` takes it where reverse mode does not
    differentiate the gradient's code again, as the vjp of the gradient does (higher.py)."""
    if not isinstance(f, gradient.GradientFunction) or not gradient._composable(f) \
            or isinstance(f._wrt, (tuple, list)) or isinstance(wrt, (tuple, list)):
        return None
    block = _GradientTangent(f.__astgrad_function__, f._wrt, wrt, optimize)
    block._directions = directions
    return block


def hessian(f, wrt=0, *, optimize: int | None = None):
    """The hessian of a scalar ``f`` by generated code: forward mode over its generated gradient.

    ``hessian(f)(*args)`` has shape ``x.shape + x.shape``.  Column ``j`` is
    the generated jvp of the code ``grad(f)`` generates, along the basis
    vector ``j`` of ``x``; for a tuple ``wrt`` the result is the nested tuple
    of blocks ``H[i][j] = d2f / dx_i dx_j``, of shape ``x_i.shape + x_j.shape``.
    For an argument holding dicts, lists and tuples the blocks nest as in
    ``jax.hessian``: ``H[a][b]`` for leaves ``a`` and ``b``, of shape
    ``a.shape + b.shape`` (with a tuple ``wrt``, ``H[i][a][j][b]``).
    Every column of a block comes from one call of that jvp batched over its
    tangent, which holds every basis vector (``.batched`` is then True and
    ``.source`` is the batched code); where the jvp's code is not batched (a
    callee, a rule without a batched form, containers), one jvp per column.
    """
    names = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    blocks = [[_GradientTangent(f, row, column, optimize) for column in names] for row in names]
    signature = inspect.signature(f)

    def run(*args, **kwargs):
        _, inputs = _inputs(f, signature, tuple(names), args, kwargs, "hessian")
        found: list = []
        for i, row in enumerate(blocks):
            found.append([])
            for j, tangent_of_gradient in enumerate(row):
                block = tangent_of_gradient.block(args, kwargs, inputs[j])
                if block is not None:
                    found[i].append(block[0])
                    continue
                along = tangent_of_gradient.at(args, kwargs)
                columns = [(path, along(v)) for path, v in _directions(inputs[j])]
                found[i].append(_assemble(inputs[i], inputs[j], columns))
        if not isinstance(wrt, (tuple, list)):
            return found[0][0]
        return tuple(_map_paths(lambda path, leaf, i=i: tuple(_trees.get(found[i][j], path) for j in range(len(names)))
                                if not is_tree(inputs[i]) or _trees.differentiated(path, leaf) else None, inputs[i])
                     for i in range(len(names)))

    parts = [block for row in blocks for block in row]
    return Composed(f, "hessian", run, parts, [block._directions for block in parts])


def hvp(f, wrt=0, *, optimize: int | None = None):
    """``hvp(f)(*args, v)``: the hessian of a scalar ``f`` times ``v``, without building the hessian.

    One generated jvp of the generated gradient along ``v`` (forward over
    reverse; ``v`` has the structure and shapes of the argument ``wrt``
    names, dicts, lists and tuples included): the cost of a few gradients.
    """
    if isinstance(wrt, (tuple, list)):
        raise TypeError("astgrad.hvp: wrt names one argument (for several, hessian gives every block)")
    product = _GradientTangent(f, wrt, wrt, optimize)

    def run(*args, **kwargs):
        if not args:
            raise TypeError("astgrad.hvp: call it as hvp(f)(*args, v)")
        *primals, v = args
        out = product(primals, kwargs, v)
        return _dask.finish(out, v) if _dask.is_lazy(out) else out

    return Composed(f, "hvp", run, [product])


def elementwise_grad(f, wrt=0, *, optimize: int | None = None):
    """The gradient of ``np.sum(f(*args))``: the vjp of ``f`` with a seed of ones.

    For a function that works element by element (each output depends on the
    matching input alone, as ``np.tanh``) this is the derivative at each
    element.  It is not checked: for any other function it is still the
    gradient of the sum of the outputs, the column sums of the Jacobian.
    """
    product = gradient.vjp(f, wrt, optimize=optimize)

    def run(*args, **kwargs):
        return product(*args, np.ones(_output_shape(f, args, kwargs, "elementwise_grad")), **kwargs)

    return Composed(f, "elementwise_grad", run, [product])


def make_ggnvp(f, g=None, f_argnum=0, *, optimize: int | None = None):
    """HIPS autograd's Gauss-Newton-vector products: ``make_ggnvp(f, g)(*args)`` returns ``ggnvp(v)``.

    ``ggnvp(v) = J^T H J v``, with ``J`` the Jacobian of ``f`` with respect
    to its argument ``f_argnum`` at ``args`` and ``H`` the hessian of the
    scalar ``g`` at ``y = f(*args)``; ``g`` defaults to ``0.5 * sum(y ** 2)``
    (``H`` the identity: ``J^T J v``).  The point's forward sweep runs once
    (``vjp(f, *args)``'s pullback serves every ``v``); each ``ggnvp(v)``
    runs one generated jvp of ``f``, one ``hvp`` of ``g`` and the pullback.
    """
    if not splittable(f):
        raise TypeError(f"astgrad.make_ggnvp: {getattr(f, '__qualname__', f)!r} must be a plain Python function")
    tangent = jvp(f, f_argnum, optimize=optimize)
    curvature = None if g is None else hvp(g, optimize=optimize)
    signature = inspect.signature(f)

    def at(*args, **kwargs):
        names, (x,) = _inputs(f, signature, (f_argnum,), args, kwargs, "make_ggnvp")
        y, vjp_fn, _ = pullback_at(f, args, kwargs, names, False, optimize)
        args = tuple(copied(a) for a in args)
        kwargs = {k: copied(v) for k, v in kwargs.items()}

        def ggnvp(v):
            _, jv = tangent(*args, v, **kwargs)
            return vjp_fn(jv if curvature is None else curvature(y, jv))[0]

        ggnvp.__qualname__ = ggnvp.__name__ = f"ggnvp_{getattr(f, '__name__', 'f')}"
        return ggnvp

    return at
