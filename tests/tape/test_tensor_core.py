"""The Tensor class lives in one core module; the modules that record operations add them with ``extends``."""

import pytest

import astgrad.tape as tape
from astgrad.tape._tensor import Tensor, extends


def test_extends_refuses_a_name_the_class_already_has():
    with pytest.raises(TypeError, match=r"_Again\.add: Tensor already has add"):
        @extends(Tensor)
        class _Again:
            def add(self, other):
                return "replaced"

    assert tape.tensor([1.0]).add(1.0).tolist() == [2.0]


def test_operations_from_every_module_are_the_class_own():
    t = tape.tensor([[1.0, 2.0]], requires_grad=True)
    for name in ("__add__", "exp", "reshape", "add_", "__array_ufunc__", "backward", "grad"):
        assert name in vars(Tensor), name
    assert Tensor.exp.__qualname__ == "Tensor.exp"
    with pytest.raises(TypeError, match=r"^Tensor\.reshape_as\(\) missing 1 required positional argument"):
        t.reshape_as()
