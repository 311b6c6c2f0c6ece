"""The advice of a missing rule is code a user can write, or no code at all.

``astgrad.defvjp(mod.<mod.Linear object at 0x...>, rule)`` is not Python: a
callable with no name that leads back to it (an instance with ``__call__``,
a ``functools.partial``, an ``np.vectorize``) gets a description and a
rewrite instead of a ``defvjp`` call.
"""

import functools
import re
import sys

import numpy as np
import pytest

import astgrad
from astgrad import rules
from astgrad.tape import tensor


class Scaler:
    def __call__(self, x):
        return x * 2


def scale(x, k):
    return x * k


scaler = Scaler()
half = functools.partial(scale, k=0.5)
doubled = np.vectorize(lambda v: v * 2)


def uses_instance(x):
    return np.sum(scaler(x))


def uses_partial(x):
    return np.sum(half(x))


def uses_vectorize(x):
    return np.sum(doubled(x))


def _advised_names(text):
    return re.findall(r"astgrad\.def(?:vjp|nondiff)\(([^,()]+)", text)


def _resolves(dotted):
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        value = sys.modules.get(".".join(parts[:split]))
        if value is not None:
            for part in parts[split:]:
                value = getattr(value, part)
            return callable(value)
    return False


def _assert_writable(text):
    assert "object at 0x" not in text, text
    for name in _advised_names(text):
        assert name == "that_function" or _resolves(name), (name, text)


@pytest.mark.parametrize("fn", [scaler, half, doubled, np.add.reduce], ids=["instance", "partial", "vectorize",
                                                                           "ufunc_method"])
def test_lookup_never_shows_a_repr_as_code(fn):
    with pytest.raises(rules.NoRuleError) as error:
        rules.lookup(fn)
    _assert_writable(str(error.value))
    assert "no gradient rule for" in str(error.value)


def test_partial_points_at_the_function_it_wraps():
    with pytest.raises(rules.NoRuleError) as error:
        rules.lookup(half)
    text = str(error.value)
    assert "functools.partial(" in text and f"{__name__}.scale" in text
    assert _advised_names(text) == [f"{__name__}.scale"]


def test_generated_engine_refusal_is_writable():
    with pytest.raises(astgrad.TransformError) as error:
        astgrad.grad(uses_vectorize)(np.ones(3))
    _assert_writable(str(error.value))


@pytest.mark.parametrize("f, slope", [(uses_instance, 2.0), (uses_partial, 0.5)], ids=["instance", "partial"])
def test_generated_engine_calls_an_instance_or_a_partial_as_its_function(f, slope):
    """A user's object with ``__call__`` and a partial of a user function are the function called, with
    ``self`` or the fixed arguments as constants."""
    np.testing.assert_allclose(astgrad.grad(f)(np.ones(3)), np.full(3, slope))


def test_tape_refusal_is_writable():
    with pytest.raises(rules.NoRuleError) as error:
        np.frompyfunc(lambda v: v, 1, 1)(tensor(np.ones(2), requires_grad=True))
    _assert_writable(str(error.value))


def test_named_callables_keep_the_defvjp_advice():
    for fn, name in ((scale, f"{__name__}.scale"),):
        with pytest.raises(rules.NoRuleError) as error:
            rules.lookup(fn)
        assert f"astgrad.defvjp({name}, rule)" in str(error.value)
        assert f"astgrad.defnondiff({name})" in str(error.value)
