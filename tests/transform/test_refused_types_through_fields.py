"""np.matrix, masked arrays and operator-defining subclasses reached through fields and items are refused.

Arguments, globals and closure variables are looked at where they enter
(tests/transform/test_argument_types.py); here the value sits one step
further: a field of an object (``self.M``, ``config.M``, ``getattr``), a
field of a module, an item of a global dict or list.  With ``np.matrix``
``M * x`` is a matrix product while the rules are ndarray's, so each route
gave the gradient of other code; each is now a ``TypeError`` naming the
path, and the same route holding a plain array gives the gradient of
central differences.
"""

import dataclasses
import sys
import types

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient


class Holder:
    def __init__(self, m):
        self.M = m

    def loss(self, x):
        return np.sum(self.M * x)


@dataclasses.dataclass
class Params:
    M: object


class Settings:
    M = None


HOLDER = Holder(None)
CONFIG = types.SimpleNamespace(M=None)
PARAMS = Params(None)
TABLE = {"M": None}
ROWS = [None]
MODULE = types.ModuleType("astgrad_test_config")
sys.modules[MODULE.__name__] = MODULE


def via_global_object(x):
    return np.sum(CONFIG.M * x)


def via_global_dataclass(x):
    return np.sum(PARAMS.M * x)


def via_global_dict(x):
    return np.sum(TABLE["M"] * x)


def via_global_list(x):
    return np.sum(ROWS[0] * x)


def via_getattr(x):
    return np.sum(getattr(CONFIG, "M") * x)  # noqa: B009 - the route tested


def via_module(x):
    return np.sum(MODULE.M * x)


def via_class_attribute(x):
    return np.sum(Settings.M * x)


def via_nested_field(x):
    return np.sum(HOLDER.M["inner"][0] * x)


def via_argument_object(x, h):
    return np.sum(h.M * x)


def closure_over(holder):
    def via_closure(x):
        return np.sum(holder.M * x)
    return via_closure


def _set(route, value):
    """Put ``value`` where ``route`` reads it; the function to differentiate and its extra arguments."""
    holder = Holder(value)
    if route == "bound_method":
        return holder.loss, ()
    if route == "argument_object":
        return via_argument_object, (holder,)
    if route == "closure":
        return closure_over(holder), ()
    if route == "nested_field":
        HOLDER.M = {"inner": [value]}
        return via_nested_field, ()
    CONFIG.M = PARAMS.M = TABLE["M"] = ROWS[0] = MODULE.M = Settings.M = value
    return {"global_object": via_global_object, "global_dataclass": via_global_dataclass,
            "global_dict": via_global_dict, "global_list": via_global_list, "getattr": via_getattr,
            "module": via_module, "class_attribute": via_class_attribute}[route], ()


ROUTES = ["bound_method", "argument_object", "closure", "nested_field", "global_object", "global_dataclass",
          "global_dict", "global_list", "getattr", "module", "class_attribute"]
M = np.array([[1.0, 2.0], [3.0, 4.0]])


class Scaled(np.ndarray):
    def __mul__(self, other):
        return np.asarray(self) * other * 2.0


OTHER_MEANINGS = {
    "matrix": (np.matrix(M), "numpy.matrix"),
    "masked": (np.ma.masked_array(M, mask=[[True, False], [False, False]]), "MaskedArray"),
    "subclass": (M.view(Scaled), "Scaled"),
}


@pytest.mark.parametrize("kind", sorted(OTHER_MEANINGS))
@pytest.mark.parametrize("route", ROUTES)
def test_a_value_of_another_meaning_is_refused_by_its_path(route, kind):
    value, named = OTHER_MEANINGS[kind]
    f, extra = _set(route, value)
    with pytest.raises(TypeError, match=named):
        astgrad.grad(f)(np.ones((2, 2)), *extra)


@pytest.mark.parametrize("route", ROUTES)
def test_a_plain_array_there_gives_the_gradient_of_differences(route):
    f, extra = _set(route, M.copy())
    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    np.testing.assert_allclose(astgrad.grad(f)(x, *extra), gradient(lambda v: f(v, *extra), x), rtol=1e-6)


def test_a_matrix_bound_after_the_gradient_was_made_is_refused():
    f, _ = _set("module", M.copy())
    g = astgrad.grad(f)
    g(np.ones((2, 2)))
    MODULE.M = np.matrix(M)
    with pytest.raises(TypeError, match=r"astgrad_test_config\.M, which the differentiated code reads"):
        g(np.ones((2, 2)))


def test_the_error_names_the_path_inside_what_the_field_holds():
    f, _ = _set("nested_field", np.matrix(M))
    with pytest.raises(TypeError, match=r"HOLDER\.M\['inner'\]\[0\]"):
        astgrad.grad(f)(np.ones((2, 2)))
