"""Values with a tangent, for testing forward rules through the sample cases' helper calls.

A ``Dual`` holds a value and its tangent.  Any numpy call on one (a ufunc,
a numpy function, an astgrad primitive, an operator) runs on the values and
computes the output's tangent from the table's forward rules, one call at a
time, with ``rules.tangent_of_call``: the sum of each argument's
contribution.  Tests only: the library's forward mode transforms source.
"""

from __future__ import annotations

import numpy as np

from astgrad import rules


class Dual:
    __array_priority__ = 1000

    def __init__(self, value, tangent):
        self.value = value
        self.tangent = tangent

    shape = property(lambda self: np.shape(self.value))
    ndim = property(lambda self: np.ndim(self.value))
    size = property(lambda self: np.size(self.value))
    dtype = property(lambda self: np.asarray(self.value).dtype)
    T = property(lambda self: call(np.transpose, (self,), {}))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            return NotImplemented
        return call(ufunc, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return call(func, args, kwargs)

    @staticmethod
    def _astgrad_apply(fn, args, kwargs):
        return call(fn, args, kwargs)

    def __getitem__(self, index):
        return call(rules.getitem, (self, index), {})

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _binary(ufunc):
    return (lambda self, other: ufunc(self, other)), (lambda self, other: ufunc(other, self))


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.divide),
                      ("pow", np.power), ("matmul", np.matmul)):
    _forward, _reflected = _binary(_ufunc)
    setattr(Dual, f"__{_name}__", _forward)
    setattr(Dual, f"__r{_name}__", _reflected)
for _name, _ufunc in (("gt", np.greater), ("lt", np.less), ("ge", np.greater_equal), ("le", np.less_equal),
                      ("eq", np.equal), ("ne", np.not_equal)):
    setattr(Dual, f"__{_name}__", lambda self, other, _ufunc=_ufunc: _ufunc(value(self), value(other)))
Dual.__neg__ = lambda self: np.negative(self)
Dual.__pos__ = lambda self: np.positive(self)
Dual.__abs__ = lambda self: np.absolute(self)


def value(x):
    """``x`` with every Dual (also inside a list or tuple) replaced by its value."""
    if isinstance(x, Dual):
        return x.value
    if isinstance(x, (list, tuple)):
        return type(x)(value(item) for item in x)
    return x


def _holds_dual(x) -> bool:
    return isinstance(x, Dual) or (isinstance(x, (list, tuple)) and any(_holds_dual(item) for item in x))


def _zeros(x):
    """A zero tangent of the structure of ``x`` (nested lists stay lists, as ``np.block`` reads them)."""
    if isinstance(x, (list, tuple)):
        return [_zeros(item) for item in x]
    return None if x is None else np.zeros_like(x)  # None: a generated gradient's item that got none


def tangent(x):
    """The tangent of ``x``: ``None`` without one; a list of tangents (zeros for the rest, None for None) for a list
    holding Duals, nested as the list is (``np.block``)."""
    if isinstance(x, Dual):
        return x.tangent
    if isinstance(x, (list, tuple)) and _holds_dual(x):
        return [tangent(item) if _holds_dual(item) else _zeros(item) for item in x]
    return None


def call(fn, args, kwargs):
    if any(tangent(v) is not None for v in kwargs.values()):
        raise NotImplementedError("a tangent passed by keyword")
    primal_args = [value(a) for a in args]
    primal_kwargs = {k: value(v) for k, v in kwargs.items()}
    ans = rules.raw(fn)(*primal_args, **primal_kwargs)
    tangents = [tangent(a) for a in args]
    entry = rules.lookup(fn)
    if entry.vjp is None or all(t is None for t in tangents):
        return ans
    out = rules.tangent_of_call(entry, tangents, ans, primal_args, primal_kwargs)
    return join(ans, out)


def join(ans, out):
    """Duals of ``ans`` and its tangent ``out``, item by item for several outputs."""
    if isinstance(ans, (tuple, list)):
        parts = [join(a, t) for a, t in zip(ans, out)]
        return parts if isinstance(ans, list) else tuple(parts)
    return ans if out is None else Dual(ans, out)
