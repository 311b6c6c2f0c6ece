"""Which numpy calls write into an argument is read from numpy (signatures, ``nin``/``nout``), not typed by hand.

Each test enumerates what the installed numpy has, so the next numpy's new
``out``-like parameter, or a new array method, fails here before a user meets it.
"""

import inspect
import re

import numpy as np
import pytest

from astgrad.transform.front import numpy_writes

#: parameter names that name where a result goes or whether an argument is kept (checked against every callable)
_SUSPECT = re.compile(r"^(out\w*|\w*_out|overwrite\w*|\w*inplace|\w*in_place|copy|destroy\w*|into)$")
#: parameters that match but write into no array argument: np.info's output is a file, a dtype's copy makes a dtype
_NOT_WRITING = {("info", "output"), ("dtype", "copy")}
#: ``copy`` parameters whose False returns the input (or a view of it) rather than writing into it: the
#: aliasing check counts their results as possibly shared (``copy=`` given and not True)
_COPY_RETURNS_INPUT = {"array", "asarray", "asanyarray", "astype", "from_dlpack", "matrix", "meshgrid", "reshape"}


def _callables():
    for space, module in numpy_writes.NAMESPACES.items():
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if callable(obj) and not (isinstance(obj, type) and issubclass(obj, BaseException)):
                yield f"{space}.{name}", name, obj


def test_every_writing_parameter_of_numpy_is_a_door():
    unknown, missed = [], []
    for shown, name, obj in _callables():
        if isinstance(obj, np.ufunc):
            continue
        params = numpy_writes.parameters(obj)
        if params is None:
            continue
        doors = numpy_writes.doors(obj)
        known = {d.parameter for d in doors}
        if any(name == "size" for name, _ in params):  # a random generator's out sets the result's shape
            assert all(d.kind == numpy_writes.SIZED for d in doors if d.parameter == "out"), shown
        for param, _ in params:
            if not _SUSPECT.search(param) or (name, param) in _NOT_WRITING:
                continue
            if param == "copy" and name in _COPY_RETURNS_INPUT:
                assert param not in known, shown  # read from numpy's description: a view, not a write
                continue
            if param == "out" or param.startswith("overwrite_") or param in ("inplace", "copy"):
                if param not in known:
                    missed.append(f"{shown}({param})")
            else:
                unknown.append(f"{shown}({param})")
    assert not missed, f"writing parameters numpy_writes does not read: {missed}"
    assert not unknown, f"parameters that may write, which no one has classified: {unknown}"


def test_random_generators_out_is_known_to_set_the_shape():
    rng = np.random.default_rng(0)
    assert [d.kind for d in numpy_writes.doors(rng.random)] == [numpy_writes.SIZED]
    a = np.zeros(3)
    rng.random(out=a)  # what numpy does: three draws, where rng.random() would give one
    assert len(set(a)) == 3


def test_a_ufunc_writes_its_outputs_by_position_from_nin_and_nout():
    for shown, _, obj in _callables():
        if isinstance(obj, np.ufunc):
            doors = numpy_writes.doors(obj)
            assert [d.position for d in doors] == list(range(obj.nin, obj.nin + obj.nout)), shown
    a = np.array([1.0, -1.0])
    q, r = np.zeros(2), np.zeros(2)
    np.divmod(a, 0.75, q, r)  # numpy's own behaviour, that the doors describe
    np.testing.assert_array_equal(q * 0.75 + r, a)


@pytest.mark.parametrize("method", ["reduce", "accumulate", "reduceat"])
def test_a_ufunc_method_has_its_own_positional_out(method):
    doors = numpy_writes.doors(numpy_writes.ufunc_method(np.add, method))
    out = [d for d in doors if d.kind == numpy_writes.OUT]
    assert len(out) == 1 and out[0].position == {"reduce": 3, "accumulate": 3, "reduceat": 4}[method]


def test_flags_name_the_argument_they_let_numpy_write_into():
    median = {d.parameter: d for d in numpy_writes.doors(np.median)}
    assert median["overwrite_input"].kind == numpy_writes.SCRAMBLE and median["overwrite_input"].target == 0
    nan = {d.parameter: d for d in numpy_writes.doors(np.nan_to_num)}
    assert nan["copy"].kind == numpy_writes.IN_PLACE and nan["copy"].target_name == "x"
    a = np.array([np.nan, 1.0])
    np.nan_to_num(a, copy=False)  # numpy does write in place: what the door says
    assert not np.isnan(a).any()


def test_every_public_array_method_is_classified():
    public = {m for m in dir(np.ndarray) if not m.startswith("_")}
    unclassified = public - numpy_writes.WRITING_METHODS - numpy_writes.READING_METHODS
    assert not unclassified, f"ndarray methods nobody has said write or only read: {sorted(unclassified)}"
    assert not numpy_writes.WRITING_METHODS & numpy_writes.READING_METHODS


def test_in_place_operators_of_arrays_are_writing_methods():
    inplace = {m for m in dir(np.ndarray) if re.fullmatch(r"__i[a-z]+__", m)} - {"__index__", "__init__", "__int__",
                                                                                 "__invert__", "__iter__"}
    assert inplace and inplace <= numpy_writes.WRITING_METHODS


def test_a_signature_missing_is_read_from_the_docstring():
    def fromtext(*args, **kwargs):
        """fromtext(string, dtype=float, out=None, *, sep, overwrite_input=False)

        A made-up C function without a signature."""
    fromtext.__signature__ = None
    del fromtext.__signature__
    params = numpy_writes._from_docstring(fromtext)
    assert params == [("string", True), ("dtype", True), ("out", True), ("sep", False), ("overwrite_input", False)]


def test_method_doors_count_positions_without_self():
    cumsum = numpy_writes.method_doors("cumsum")
    assert [(d.parameter, d.position) for d in cumsum] == [("out", 2)]
    try:  # the reference: numpy's own signature (self, axis, dtype, out), or before numpy 2.3 its docstring's
        assert list(inspect.signature(np.ndarray.cumsum).parameters)[3] == "out"
    except ValueError:
        assert np.ndarray.cumsum.__doc__.lstrip().startswith("a.cumsum(axis=None, dtype=None, out=None)")


def test_the_output_position_of_a_function_or_an_array_method():
    from astgrad.transform.ir.compat import gast
    from astgrad.transform.front.parse import MISSING
    from astgrad.transform.front.writes import _out_position

    clip = gast.Attribute(value=gast.Name(id="m", ctx=gast.Load(), annotation=None, type_comment=None),
                          attr="clip", ctx=gast.Load())
    assert _out_position(np.add, None) == 2 and _out_position(np.divmod, None) == 2
    assert _out_position(np.cumsum, None) == list(inspect.signature(np.cumsum).parameters).index("out")
    assert _out_position(MISSING, clip) == 2 and _out_position(np.sort, None) is None
