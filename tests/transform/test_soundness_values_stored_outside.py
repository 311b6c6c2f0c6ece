"""An array stored where the function's names cannot see it, then written in place.

``G.h = h`` (an attribute of a global object), ``D["h"] = h`` (a global
dict) and ``L.append(h)`` (a global list) run as written, so the outside
object holds the memory ``h`` holds; numpy's ``h[0] = 5.0`` afterwards
changes what ``G.h`` reads too. astgrad's write makes a new array, so
``G.h`` kept the old values: the value and the gradient were 0 where Python
gives 15 and [5, 5]. Such a write is refused, at its line; storing after the
last write, or storing a copy, is exact.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from tests._numeric import assert_grad


class Box:
    pass


G = Box()
D = {}
L = []


def into_attribute(x):
    h = np.zeros(2)
    G.h = h
    h[0] = 5.0
    return np.sum(x * G.h[0])


def into_dict(x):
    h = np.zeros(2)
    D["h"] = h
    h[0] = 5.0
    return np.sum(x * D["h"][0])


def into_list(x):
    h = np.zeros(2)
    L.append(h)
    h[0] = 5.0
    return np.sum(x * L[-1][0])


def through_a_view(x):
    h = np.zeros(2)
    row = h[0:1]
    G.h = row
    h += x
    return np.sum(x * G.h)


def in_a_loop(x):
    h = np.zeros(2)
    for k in range(2):
        h[k] = x[k] * 2.0  # the second write changes what the first store put in G.h
        G.h = h
    return np.sum(x * G.h)


@pytest.mark.parametrize("fn", [into_attribute, into_dict, into_list, through_a_view, in_a_loop])
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_a_write_after_the_array_was_stored_outside_is_refused(fn, transform):
    x = np.array([1.0, 2.0])
    with pytest.raises(UnsupportedSyntaxError, match=r"which keeps the same array; astgrad's .* writes to a copy"):
        if transform == "grad":
            astgrad.grad(fn)(x)
        else:
            astgrad.jvp(fn)(x, np.ones(2))


def stored_after_the_writes(x):
    h = np.zeros(2)
    h[0] = 5.0
    h[1] = 3.0
    G.h = h
    D["h"] = h
    return np.sum(x * G.h) + D["h"][1] * x[0]


def stored_copies(x):
    h = np.zeros(2)
    G.h = h.copy()
    D["h"] = h.copy()
    h[0] = 5.0
    print(h)  # print keeps nothing
    return np.sum(x * h) + np.sum(x * G.h) + np.sum(D["h"])


@pytest.mark.parametrize("fn", [stored_after_the_writes, stored_copies])
def test_storing_after_the_last_write_or_a_copy_is_exact(fn, capsys):
    x = np.array([1.5, -0.5])
    assert_grad(astgrad.grad(fn), fn, x)
    np.testing.assert_allclose(astgrad.value_and_grad(fn)(x)[0], fn(x.copy()))
