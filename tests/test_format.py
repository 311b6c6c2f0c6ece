"""The tensor repr must match PyTorch byte for byte (TORCH_SEMANTICS.md, sections 1, 2 and 13).

Every expected string below was printed by real PyTorch 2.13. Where torch's
input was random (randn), the array is rebuilt from the printed 4-decimal
values, which reproduces the same layout.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

try:
    from astgrad.tape._format import dtype_name, format_tensor, legacy_type_name
except Exception:  # the package __init__ files are written in parallel and may not import yet
    _path = pathlib.Path(__file__).resolve().parents[1] / "src/astgrad/tape/_format.py"
    _spec = importlib.util.spec_from_file_location("_astgrad_format", _path)
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    dtype_name, format_tensor, legacy_type_name = (
        _module.dtype_name,
        _module.format_tensor,
        _module.legacy_type_name,
    )

F32, F64, F16 = np.float32, np.float64, np.float16
I64, I32 = np.int64, np.int32
NAN, INF = float("nan"), float("inf")
GRAD = "requires_grad=True"
MUL = "grad_fn=<MulBackward0>"


def arr(values, dtype=F32):
    return np.array(values, dtype=dtype)


def ones_with(shape, index, value):
    data = np.ones(shape, F32)
    data[index] = value
    return data


ELEMENT_FORMAT = [
    (arr([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (arr([1, 2, 3], I64), "tensor([1, 2, 3])"),
    (arr([-1, 2, 10], I64), "tensor([-1,  2, 10])"),
    (arr([100, -5, 7], I64), "tensor([100,  -5,   7])"),
    (arr([1.5, 2.25, -3.0]), "tensor([ 1.5000,  2.2500, -3.0000])"),
    (arr([-1.0, 2.0, 10.0]), "tensor([-1.,  2., 10.])"),
    (arr([-1.5, 2.0, 10.0]), "tensor([-1.5000,  2.0000, 10.0000])"),
    (arr([1.0, -100.0]), "tensor([   1., -100.])"),
    (arr([0.5, -100.25]), "tensor([   0.5000, -100.2500])"),
    (arr([0.0, 0.0]), "tensor([0., 0.])"),
    (arr([0.0, -0.0]), "tensor([0., -0.])"),
    (arr([1.23456789]), "tensor([1.2346])"),
    (arr([0.12345, 0.00015]), "tensor([0.1235, 0.0002])"),
    (arr([True, False, True], bool), "tensor([ True, False,  True])"),
    (arr([True, True], bool), "tensor([True, True])"),
    (arr([0.1, 1.0, 0.0001]), "tensor([1.0000e-01, 1.0000e+00, 1.0000e-04])"),
    (arr([102.4, 1024.0, 0.1024]), "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"),
    (arr([1.0, 1000.0]), "tensor([   1., 1000.])"),
    (arr([1.0, 1001.0]), "tensor([1.0000e+00, 1.0010e+03])"),
    (arr([0.5, 500.0]), "tensor([  0.5000, 500.0000])"),
    (arr([0.5, 500.5]), "tensor([5.0000e-01, 5.0050e+02])"),
    (arr([1e8]), "tensor([100000000.])"),
    (arr([100000008.0]), "tensor([1.0000e+08])"),
    (arr([99999999.0]), "tensor([100000000.])"),
    (arr([1e9]), "tensor([1.0000e+09])"),
    (arr([100000.5]), "tensor([100000.5000])"),
    (arr([0.0001]), "tensor([1.0000e-04])"),
    (arr([0.0001], F64), "tensor([0.0001], dtype=torch.float64)"),
    (arr([0.00011]), "tensor([0.0001])"),
    (arr([1e-10, 0.0]), "tensor([1.0000e-10, 0.0000e+00])"),
    (arr([-1e-5, 1.0]), "tensor([-1.0000e-05,  1.0000e+00])"),
    (arr([1.5e10, -2.0]), "tensor([ 1.5000e+10, -2.0000e+00])"),
    (arr([NAN, 1.0]), "tensor([nan, 1.])"),
    (arr([NAN, 1.5]), "tensor([   nan, 1.5000])"),
    (arr([INF, -INF, NAN]), "tensor([inf, -inf, nan])"),
    (arr([-INF, 100.0]), "tensor([-inf, 100.])"),
    (arr([NAN, 1e-5]), "tensor([       nan, 1.0000e-05])"),
]


@pytest.mark.parametrize("data, expected", ELEMENT_FORMAT)
def test_element_format_table(data, expected):
    assert format_tensor(data) == expected


def test_int_mode_up_to_a_million_is_not_sci():
    assert format_tensor(np.arange(12, dtype=F32) * F32(1e5)).startswith(
        "tensor([      0.,  100000.,  200000., "
    )


SCALARS = [
    (arr(3.0), None, "tensor(3.)"),
    (arr(3, I64), None, "tensor(3)"),
    (arr(3.5), None, "tensor(3.5000)"),
    (arr(-0.5), None, "tensor(-0.5000)"),
    (arr(27.0), None, "tensor(27.)"),
    (arr(0.1), None, "tensor(0.1000)"),
    (arr(1e-5), None, "tensor(1.0000e-05)"),
    (arr(0.0001), None, "tensor(1.0000e-04)"),
    (arr(0.00011), None, "tensor(0.0001)"),
    (arr(123456789.0), None, "tensor(1.2346e+08)"),
    (arr(1e20), None, "tensor(1.0000e+20)"),
    (arr(12345.678), None, "tensor(12345.6777)"),
    (arr(-0.0), None, "tensor(-0.)"),
    (arr(0.0), None, "tensor(0.)"),
    (arr(NAN), None, "tensor(nan)"),
    (arr(INF), None, "tensor(inf)"),
    (arr(True, bool), None, "tensor(True)"),
    (arr(False, bool), None, "tensor(False)"),
    (arr(-7, I64), None, "tensor(-7)"),
    (arr(102.4), None, "tensor(102.4000)"),
    (arr(1024.0), None, "tensor(1024.)"),
    (arr(0.1024), None, "tensor(0.1024)"),
    (arr(1e8), None, "tensor(100000000.)"),
    (arr(1.5e8), None, "tensor(1.5000e+08)"),
    (arr(1.0, F64), None, "tensor(1., dtype=torch.float64)"),
    (arr(3, I32), None, "tensor(3, dtype=torch.int32)"),
    (arr(2.0), GRAD, "tensor(2., requires_grad=True)"),
    (arr(6.0), MUL, "tensor(6., grad_fn=<MulBackward0>)"),
]


@pytest.mark.parametrize("data, suffix, expected", SCALARS)
def test_scalars(data, suffix, expected):
    assert format_tensor(data, suffix) == expected


RANDN_ROW = [
    1.5091, 2.0820, 1.7067, 2.3804, -1.1256, -0.3170, -1.0925, -0.0852, 0.3276, -0.7607,
    -1.5991, 0.0185, -0.7504, 0.1854, 0.6211, 0.6382, -0.0033, -0.5344, 1.1687, 0.3945,
]  # fmt: skip

LAYOUTS = [
    (
        np.arange(30, dtype=F32),
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])",
    ),
    (
        arr(RANDN_ROW),
        "tensor([ 1.5091,  2.0820,  1.7067,  2.3804, -1.1256, -0.3170, -1.0925, -0.0852,\n"
        "         0.3276, -0.7607, -1.5991,  0.0185, -0.7504,  0.1854,  0.6211,  0.6382,\n"
        "        -0.0033, -0.5344,  1.1687,  0.3945])",
    ),
    (
        np.arange(8, dtype=F32).reshape(2, 2, 2),
        "tensor([[[0., 1.],\n"
        "         [2., 3.]],\n"
        "\n"
        "        [[4., 5.],\n"
        "         [6., 7.]]])",
    ),
    (
        np.arange(16, dtype=I64).reshape(2, 2, 2, 2),
        "tensor([[[[ 0,  1],\n"
        "          [ 2,  3]],\n"
        "\n"
        "         [[ 4,  5],\n"
        "          [ 6,  7]]],\n"
        "\n"
        "\n"
        "        [[[ 8,  9],\n"
        "          [10, 11]],\n"
        "\n"
        "         [[12, 13],\n"
        "          [14, 15]]]])",
    ),
    (np.ones((1, 1), F32), "tensor([[1.]])"),
    (np.ones((1, 3), F32), "tensor([[1., 1., 1.]])"),
    (np.ones((2, 1, 2), F32), "tensor([[[1., 1.]],\n\n        [[1., 1.]]])"),
]


@pytest.mark.parametrize("data, expected", LAYOUTS)
def test_layouts(data, expected):
    assert format_tensor(data) == expected


def test_long_matrix_row_wraps_with_nine_spaces():
    data = arr([RANDN_ROW, [1.9415] * 20])
    assert format_tensor(data).startswith(
        "tensor([[ 1.5091,  2.0820,  1.7067,  2.3804, -1.1256, -0.3170, -1.0925, -0.0852,\n"
        "          0.3276, -0.7607, -1.5991,  0.0185, -0.7504,  0.1854,  0.6211,  0.6382,\n"
        "         -0.0033, -0.5344,  1.1687,  0.3945],\n"
        "        [ 1.9415, "
    )


def test_thousand_elements_print_in_full():
    text = format_tensor(np.arange(1000, dtype=F32))
    assert len(text.splitlines()) == 84
    assert "..." not in text


ZEROS_100 = "[0., 0., 0.,  ..., 0., 0., 0.]"
ONES_ROW = "[1., 1., 1.,  ..., 1., 1., 1.]"
SUMMARIES = [
    (np.arange(1001, dtype=F32), None, "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])"),
    (np.ones(1001, F32), None, "tensor([1., 1., 1.,  ..., 1., 1., 1.])"),
    (np.ones(2000, F32), GRAD, "tensor([1., 1., 1.,  ..., 1., 1., 1.], requires_grad=True)"),
    (np.full(2000, 2, F32), MUL, "tensor([2., 2., 2.,  ..., 2., 2., 2.], grad_fn=<MulBackward0>)"),
    (ones_with(1001, 500, 0.5), None, "tensor([1., 1., 1.,  ..., 1., 1., 1.])"),
    (
        ones_with(1001, 0, 0.5),
        None,
        "tensor([0.5000, 1.0000, 1.0000,  ..., 1.0000, 1.0000, 1.0000])",
    ),
    (
        np.zeros((100, 100), F32),
        None,
        "tensor(["
        + ",\n        ".join([ZEROS_100] * 3 + ["..."] + [ZEROS_100] * 3)
        + "])",
    ),
    (np.ones((4, 300), F32), None, "tensor([" + ",\n        ".join([ONES_ROW] * 4) + "])"),
    (
        np.ones((300, 4), F32),
        None,
        "tensor([" + ",\n        ".join(["[1., 1., 1., 1.]"] * 3 + ["..."] + ["[1., 1., 1., 1.]"] * 3) + "])",
    ),
]


@pytest.mark.parametrize("data, suffix, expected", SUMMARIES)
def test_summaries(data, suffix, expected):
    assert format_tensor(data, suffix) == expected


def test_summary_formatter_sees_only_edge_items():
    text = format_tensor(np.arange(10000, dtype=F32).reshape(100, 100))
    assert text.splitlines()[:2] == [
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,",
        "         9.9000e+01],",
    ]


def test_summary_in_3d_puts_blank_lines_around_the_ellipsis():
    matrix = "[[1., 1.],\n         [1., 1.]]"
    expected = "tensor([" + ",\n\n        ".join([matrix] * 3 + ["..."] + [matrix] * 3) + "])"
    assert format_tensor(np.ones((251, 2, 2), F32)) == expected


EMPTIES = [
    (np.zeros(0, F32), None, "tensor([])"),
    (np.zeros((0, 3), F32), None, "tensor([], size=(0, 3))"),
    (np.zeros((2, 0), F32), None, "tensor([], size=(2, 0))"),
    (np.zeros(0, I64), None, "tensor([], dtype=torch.int64)"),
    (np.zeros(0, F64), None, "tensor([], dtype=torch.float64)"),
    (np.zeros(0, bool), None, "tensor([], dtype=torch.bool)"),
    (np.zeros(0, F32), GRAD, "tensor([], requires_grad=True)"),
    (np.zeros((0, 3), I32), None, "tensor([], size=(0, 3), dtype=torch.int32)"),
    (np.zeros((0, 2), F32), MUL, "tensor([], size=(0, 2), grad_fn=<MulBackward0>)"),
]


@pytest.mark.parametrize("data, suffix, expected", EMPTIES)
def test_empty_tensors(data, suffix, expected):
    assert format_tensor(data, suffix) == expected


SUFFIXES = [
    (arr([1.0, 2.0], F64), None, "tensor([1., 2.], dtype=torch.float64)"),
    (arr([1.0, 1.0], F64), GRAD, "tensor([1., 1.], dtype=torch.float64, requires_grad=True)"),
    (arr([2.0, 2.0], F64), MUL, "tensor([2., 2.], dtype=torch.float64, grad_fn=<MulBackward0>)"),
    (arr([1.0, 1.0], F16), None, "tensor([1., 1.], dtype=torch.float16)"),
    (arr([1, 2], np.int16), None, "tensor([1, 2], dtype=torch.int16)"),
    (arr([1, 2], np.int8), None, "tensor([1, 2], dtype=torch.int8)"),
    (arr([1, 255], np.uint8), None, "tensor([  1, 255], dtype=torch.uint8)"),
    (
        arr([1.5410, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986, 0.4033, 0.8380], F64),
        GRAD,
        "tensor([ 1.5410, -0.2934, -2.1788,  0.5684, -1.0845, -1.3986,  0.4033,  0.8380],\n"
        "       dtype=torch.float64, requires_grad=True)",
    ),
    (
        arr([-0.5663, 0.3731, -0.8920, -1.5091, 0.3704, 1.4565, 0.9398, 0.7748]),
        GRAD,
        "tensor([-0.5663,  0.3731, -0.8920, -1.5091,  0.3704,  1.4565,  0.9398,  0.7748],\n"
        "       requires_grad=True)",
    ),
    (
        arr([0.3840, 1.0855, -4.4376, 0.5180, -2.0594, -1.0015, 0.5467]),
        MUL,
        "tensor([ 0.3840,  1.0855, -4.4376,  0.5180, -2.0594, -1.0015,  0.5467],\n"
        "       grad_fn=<MulBackward0>)",
    ),
    (
        arr([-1.8362, 4.1152, -0.0708, 0.1254, -1.5326, 2.1985, 5.5131, 0.3506, -1.8630], F64),
        MUL,
        "tensor([-1.8362,  4.1152, -0.0708,  0.1254, -1.5326,  2.1985,  5.5131,  0.3506,\n"
        "        -1.8630], dtype=torch.float64, grad_fn=<MulBackward0>)",
    ),
    (
        arr(
            [
                [-1.8670e-01, 1.3741e00, -1.6766e00, 1.7836e-03, 1.6838e00, -8.0007e-01, 2.0789e00, 7.1631e-01],
                [-4.9200e-01, 4.6050e00, -3.7634e00, -9.9454e-02, -2.0900e00, -1.9130e00, 6.7064e-02, 1.4202e00],
            ]
        ),
        MUL,
        "tensor([[-1.8670e-01,  1.3741e+00, -1.6766e+00,  1.7836e-03,  1.6838e+00,\n"
        "         -8.0007e-01,  2.0789e+00,  7.1631e-01],\n"
        "        [-4.9200e-01,  4.6050e+00, -3.7634e+00, -9.9454e-02, -2.0900e+00,\n"
        "         -1.9130e+00,  6.7064e-02,  1.4202e+00]], grad_fn=<MulBackward0>)",
    ),
]


@pytest.mark.parametrize("data, suffix, expected", SUFFIXES)
def test_suffixes_and_wrapping(data, suffix, expected):
    assert format_tensor(data, suffix) == expected


TUTORIAL = [
    (np.ones((2, 2), F32), GRAD, "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"),
    (
        np.full((2, 2), 3, F32),
        "grad_fn=<AddBackward0>",
        "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)",
    ),
    (
        np.full((2, 2), 27, F32),
        MUL,
        "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)",
    ),
    (arr(27.0), "grad_fn=<MeanBackward0>", "tensor(27., grad_fn=<MeanBackward0>)"),
    (np.full((2, 2), 4.5, F32), None, "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"),
    (
        arr([-150.3182, 805.0087, 969.5453]),
        MUL,
        "tensor([-150.3182,  805.0087,  969.5453], grad_fn=<MulBackward0>)",
    ),
    (arr([102.4, 1024.0, 0.1024]), None, "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"),
    (arr([0.1, 1.0, 0.0001]), None, "tensor([1.0000e-01, 1.0000e+00, 1.0000e-04])"),
    (arr(1269.1149), None, "tensor(1269.1149)"),
    (arr(False, bool), None, "tensor(False)"),
    (arr(True, bool), None, "tensor(True)"),
    (np.full(3, 1024, F32), None, "tensor([1024., 1024., 1024.])"),
    (np.full((2, 2), True), None, "tensor([[True, True],\n        [True, True]])"),
    (arr([True, True, True], bool), None, "tensor([True, True, True])"),
    (
        arr([[8.5453, 0.6806], [2.0562, -3.9514]]),
        GRAD,
        "tensor([[ 8.5453,  0.6806],\n        [ 2.0562, -3.9514]], requires_grad=True)",
    ),
    (arr([2.0, 4.0, 6.0]), None, "tensor([2., 4., 6.])"),
    (arr([1.5]), None, "tensor([1.5000])"),
    (arr([1.0, 1.0]), GRAD, "tensor([1., 1.], requires_grad=True)"),
    (
        arr([1.5410, -0.2934, -1.3986]),
        "grad_fn=<MaxBackward0>",
        "tensor([ 1.5410, -0.2934, -1.3986], grad_fn=<MaxBackward0>)",
    ),
    (arr([0, 0, 1], I64), None, "tensor([0, 0, 1])"),
    (arr([1.5, 3.0]), None, "tensor([1.5000, 3.0000])"),
    (arr([2, 3], I32), None, "tensor([2, 3], dtype=torch.int32)"),
]


@pytest.mark.parametrize("data, suffix, expected", TUTORIAL)
def test_tutorial_and_transcript_reprs(data, suffix, expected):
    assert format_tensor(data, suffix) == expected


DTYPES = [
    (F32, "torch.float32", "torch.FloatTensor"),
    (F64, "torch.float64", "torch.DoubleTensor"),
    (F16, "torch.float16", "torch.HalfTensor"),
    (I64, "torch.int64", "torch.LongTensor"),
    (I32, "torch.int32", "torch.IntTensor"),
    (np.int16, "torch.int16", "torch.ShortTensor"),
    (np.int8, "torch.int8", "torch.CharTensor"),
    (np.uint8, "torch.uint8", "torch.ByteTensor"),
    (np.bool_, "torch.bool", "torch.BoolTensor"),
    (np.complex64, "torch.complex64", "torch.ComplexFloatTensor"),
    (np.complex128, "torch.complex128", "torch.ComplexDoubleTensor"),
]


@pytest.mark.parametrize("dtype, name, legacy", DTYPES)
def test_dtype_names(dtype, name, legacy):
    assert dtype_name(np.dtype(dtype)) == name
    assert legacy_type_name(np.dtype(dtype)) == legacy


def test_unsupported_dtypes_are_refused():
    with pytest.raises(TypeError):
        dtype_name(np.dtype("U3"))
    with pytest.raises(TypeError):
        format_tensor(np.array(["a"]))


def test_matches_torch_on_random_tensors():
    """Optional cross-check against a locally installed torch; skipped without it."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = tuple(int(n) for n in rng.integers(0, 5, rng.integers(0, 4)))
        scale = 10.0 ** rng.integers(-6, 10)
        values = np.round(rng.standard_normal(shape) * scale, int(rng.integers(0, 6)))
        for dtype in (F32, F64, I64):
            data = np.asarray(values).astype(dtype)
            assert format_tensor(data) == repr(torch.from_numpy(data.copy()))
