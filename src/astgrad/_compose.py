"""Jacobians and hessians from generated vector-Jacobian products.

``jacobian(f)`` calls the generated ``vjp`` of ``f`` once per element of
the output, with that element's basis vector as seed, and stacks the rows:
the result has the output's shape, then the input's (as in JAX and HIPS
autograd).  ``jacfwd`` stacks generated jvps over the input's basis vectors.
``hessian(f)`` applies the forward sweep to the code ``grad(f)`` generates
(forward over reverse, see _higher), one jvp per input element; ``hvp`` is
one such jvp along ``v``: no hessian is built.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _dask, api
from ._higher import adjoint_code
from ._jvp import jvp
from ._trees import is_tree

__all__ = ["jacobian", "jacrev", "jacfwd", "hessian", "hvp", "elementwise_grad"]


class Composed:
    """A composed transformation: called like ``f``; ``.source`` is the generated code it runs."""

    def __init__(self, f, name, run, generated):
        self.__wrapped__ = f
        self.__name__ = f"{name}_{getattr(f, '__name__', 'f')}"
        self.__qualname__ = f"{name}({getattr(f, '__qualname__', f)})"
        self.__doc__ = f"astgrad.{name} of {getattr(f, '__qualname__', f)}, by generated code."
        self._run = run
        self._generated = generated  # the generated transformations it calls

    def __call__(self, *args, **kwargs):
        return self._run(*args, **kwargs)

    @property
    def source(self) -> str:
        """The generated code of the transformations this one calls (as of the last call)."""
        return "\n".join(g.source for g in self._generated)

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


def _checked(row, what, wrt):
    if is_tree(row):
        raise TypeError(f"astgrad.{what}: the argument {wrt!r} is a {type(row).__name__}; {what} takes arrays and "
                        f"numbers (use grad for dicts, lists and tuples of arrays)")
    if np.iscomplexobj(row):
        raise TypeError(f"astgrad.{what}: the argument {wrt!r} is complex; {what} is for real inputs")
    return row


def _stack(rows, out_shape):
    """Rows (one per output element, each of the input's shape) as one array of shape out + in."""
    return _dask.stack(rows, axis=0).reshape(out_shape + np.shape(rows[0]))


def jacobian(f, wrt=0, *, optimize=None):
    """The Jacobian of ``f`` by reverse mode: one generated vjp per output element.

    ``jacobian(f)(*args)`` has shape ``f(*args).shape + x.shape`` for the
    argument ``x`` named by ``wrt``; a tuple ``wrt`` gives one such array per
    argument.  ``f`` returns one real array or number; the arguments are
    real arrays or numbers.  ``f`` runs once more for its output's shape.
    """
    single = not isinstance(wrt, (tuple, list))
    product = api.vjp(f, wrt, optimize=optimize)

    def run(*args, **kwargs):
        out_shape = _output_shape(f, args, kwargs, "jacobian")
        rows = []
        for index in np.ndindex(*out_shape):
            seed = np.zeros(out_shape)
            seed[index] = 1.0
            row = product(*args, seed, **kwargs)
            rows.append((row,) if single else row)
        names = (wrt,) if single else tuple(wrt)
        blocks = tuple(_stack([_checked(r[i], "jacobian", name) for r in rows], out_shape)
                       for i, name in enumerate(names))
        return blocks[0] if single else blocks

    return Composed(f, "jacobian", run, [product])


#: the reverse-mode jacobian, by its JAX name
jacrev = jacobian


def jacfwd(f, wrt=0, *, optimize=None):
    """The Jacobian of ``f`` by forward mode: one generated jvp per input element.

    The same result as :func:`jacobian` (shape ``f(*args).shape + x.shape``,
    a tuple of them for a tuple ``wrt``), cheaper when the input is smaller
    than the output: its cost grows with the input's size, not the output's.
    """
    single = not isinstance(wrt, (tuple, list))
    product = jvp(f, wrt, optimize=optimize)
    signature = inspect.signature(f)

    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        names, _ = api._wrt_names(f, signature, wrt)
        inputs = [bound.arguments[name] for name in names]
        for name, value in zip(names, inputs):
            _checked(value, "jacfwd", name)
        zeros = [np.zeros(np.shape(x)) if isinstance(x, np.ndarray) else 0.0 for x in inputs]
        blocks = []
        for i, x in enumerate(inputs):
            columns, out_shape = [], None
            for index in np.ndindex(*np.shape(x)):
                u = np.zeros(np.shape(x))
                u[index] = 1.0
                direction = u if isinstance(x, np.ndarray) else float(u)
                tangents = direction if single else tuple(direction if j == i else z for j, z in enumerate(zeros))
                value, tangent = product(*args, tangents, **kwargs)
                out_shape = _shape_of_output(value, f, "jacfwd")
                columns.append(_dask.broadcast_to(tangent, out_shape))
            blocks.append(_dask.stack(columns, axis=-1).reshape(out_shape + np.shape(x)))
        return blocks[0] if single else tuple(blocks)

    return Composed(f, "jacfwd", run, [product])


class _GradientTangent:
    """``H v``: the generated jvp of the code ``grad(f, wrt)`` generates, along ``v`` for the argument ``along``.

    Forward over reverse: the gradient's generated code (optimize=1, see
    _higher) transformed by the forward sweep.  ``.source`` is that jvp.
    """

    def __init__(self, f, wrt, along, optimize):
        self._gradient = api.grad(f, wrt, optimize=1)
        self._along, self._level, self._last = along, optimize, None

    def __call__(self, args, kwargs, v):
        return self.at(args, kwargs)(v)

    def at(self, args, kwargs):
        """``v -> H v`` at these arguments: the generated code looked up once for many ``v``."""
        function, constants = adjoint_code(self._gradient, api._gradient_function)
        defaults = function.__kwdefaults__ or {}
        constants = {k: c for k, c in constants.items() if k not in defaults or defaults[k] != c}
        self._last = product = jvp(function, self._along, optimize=self._level)
        kwargs = {**kwargs, **constants}
        return lambda v: product(*args, v, **kwargs)[1]

    @property
    def source(self) -> str:
        return self._last.source if self._last is not None else ""


def hessian(f, wrt=0, *, optimize=None):
    """The hessian of a scalar ``f`` by generated code: forward mode over its generated gradient.

    ``hessian(f)(*args)`` has shape ``x.shape + x.shape``.  Column ``j`` is
    the generated jvp of the code ``grad(f)`` generates, along the basis
    vector ``j`` of ``x``; for a tuple ``wrt`` the result is the nested tuple
    of blocks ``H[i][j] = d2f / dx_i dx_j``, of shape ``x_i.shape + x_j.shape``.
    """
    names = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    blocks = [[_GradientTangent(f, row, column, optimize) for column in names] for row in names]
    signature = inspect.signature(f)

    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        inputs = [bound.arguments[name] for name in api._wrt_names(f, signature, tuple(names))[0]]
        found = []
        for i, row in enumerate(blocks):
            found.append([])
            for j, tangent_of_gradient in enumerate(row):
                x = _checked(inputs[j], "hessian", names[j])
                columns, along = [], tangent_of_gradient.at(args, kwargs)
                for index in np.ndindex(*np.shape(x)):
                    v = np.zeros(np.shape(x))
                    v[index] = 1.0
                    columns.append(along(v if isinstance(x, np.ndarray) else float(v)))
                shape = np.shape(inputs[i]) + np.shape(x)
                found[i].append(_dask.stack([_dask.broadcast_to(c, np.shape(inputs[i])) for c in columns],
                                            axis=-1).reshape(shape))
        return found[0][0] if not isinstance(wrt, (tuple, list)) else tuple(tuple(row) for row in found)

    return Composed(f, "hessian", run, [block for row in blocks for block in row])


def hvp(f, wrt=0, *, optimize=None):
    """``hvp(f)(*args, v)``: the hessian of a scalar ``f`` times ``v``, without building the hessian.

    One generated jvp of the generated gradient along ``v`` (forward over
    reverse; ``v`` has the shape of the argument ``wrt`` names): the cost of
    a few gradients.
    """
    if isinstance(wrt, (tuple, list)):
        raise TypeError("astgrad.hvp: wrt names one argument (for several, hessian gives every block)")
    product = _GradientTangent(f, wrt, wrt, optimize)

    def run(*args, **kwargs):
        if not args:
            raise TypeError("astgrad.hvp: call it as hvp(f)(*args, v)")
        *args, v = args
        out = product(args, kwargs, v)
        return _dask.finish(out, v) if _dask.is_lazy(out) else out

    return Composed(f, "hvp", run, [product])


def elementwise_grad(f, wrt=0, *, optimize=None):
    """The gradient of ``np.sum(f(*args))``: the vjp of ``f`` with a seed of ones.

    For a function that works element by element (each output depends on the
    matching input alone, as ``np.tanh``) this is the derivative at each
    element.  It is not checked: for any other function it is still the
    gradient of the sum of the outputs, the column sums of the Jacobian.
    """
    product = api.vjp(f, wrt, optimize=optimize)

    def run(*args, **kwargs):
        return product(*args, np.ones(_output_shape(f, args, kwargs, "elementwise_grad")), **kwargs)

    return Composed(f, "elementwise_grad", run, [product])
