"""Render a tensor's numpy data exactly as PyTorch's ``repr(tensor)`` does.

The taped Tensor must print byte-for-byte like torch (the strings measured
from PyTorch 2.13 are pinned by tests/test_format.py), with torch's default print options: precision 4, threshold 1000,
edgeitems 3, linewidth 80. This module is pure: it sees only the numpy array
and the autograd suffix the caller chose, never a Tensor.
"""

from __future__ import annotations

import numpy as np

from ._dtypes import default_complex, default_float

__all__ = ["format_tensor", "dtype_name", "legacy_type_name"]

_LINEWIDTH = 80
_THRESHOLD = 1000
_EDGEITEMS = 3
_PREFIX = "tensor("
_INDENT = len(_PREFIX)
_ELLIPSIS_CELL = " ..."

_TORCH_NAMES = {
    "float16": ("float16", "HalfTensor"),
    "float32": ("float32", "FloatTensor"),
    "float64": ("float64", "DoubleTensor"),
    "int8": ("int8", "CharTensor"),
    "int16": ("int16", "ShortTensor"),
    "int32": ("int32", "IntTensor"),
    "int64": ("int64", "LongTensor"),
    "uint8": ("uint8", "ByteTensor"),
    "uint16": ("uint16", "UInt16Tensor"),
    "uint32": ("uint32", "UInt32Tensor"),
    "uint64": ("uint64", "UInt64Tensor"),
    "bool": ("bool", "BoolTensor"),
    "complex64": ("complex64", "ComplexFloatTensor"),
    "complex128": ("complex128", "ComplexDoubleTensor"),
}



def _implied_dtypes() -> tuple:
    """The dtype names a repr leaves out: the default float and complex dtypes, int64 and bool."""
    return (default_float().name, "int64", "bool", default_complex().name)



def _torch_names(dtype) -> tuple[str, str]:
    """Look a numpy dtype up by name, so byte order and aliases do not matter."""
    name = np.dtype(dtype).name
    try:
        return _TORCH_NAMES[name]
    except KeyError:
        raise TypeError(f"no torch dtype corresponds to numpy dtype {name!r}") from None


def dtype_name(dtype) -> str:
    """The name torch prints for ``tensor.dtype``, e.g. ``'torch.float32'``."""
    return "torch." + _torch_names(dtype)[0]


def legacy_type_name(dtype) -> str:
    """The CPU tensor type string ``tensor.type()`` returns, e.g. ``'torch.FloatTensor'``."""
    return "torch." + _torch_names(dtype)[1]


class _ElementFormat:
    """One element format for a whole tensor, so that every column lines up.

    Torch decides the style (int, fixed or sci) and the width once, from the
    values that will be shown; nan, inf and zeros never influence either.
    """

    def __init__(self, shown: np.ndarray):
        if np.issubdtype(shown.dtype, np.floating):
            self.style, self.width = _float_style(shown)
        else:
            self.style = "plain"
            self.width = max([1, *(len(str(v)) for v in set(shown.ravel().tolist()))])

    def __call__(self, value) -> str:
        return _render(self.style, value).rjust(self.width)


class _ComplexFormat:
    """PyTorch's complex elements: the real and the imaginary parts each get a float format of their own.

    The imaginary part is padded, given its ``j``, stripped of the padding and
    joined to the real part with its sign (``1.0000+2.j``, ``3.5000-1.j``).
    """

    def __init__(self, shown: np.ndarray):
        self.real, self.imag = _ElementFormat(shown.real.copy()), _ElementFormat(shown.imag.copy())
        self.width = self.real.width + self.imag.width + 1

    def __call__(self, value) -> str:
        imag = (self.imag(value.imag) + "j").lstrip()
        return self.real(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _float_style(shown: np.ndarray) -> tuple[str, int]:
    """Choose int/fixed/sci mode and the width from the finite non-zero values.

    The decisions are taken in float64 on the stored values, so a float32
    0.0001 (really 9.99999975e-05) falls below 1e-4 and goes to sci mode.
    """
    flat = shown.astype(np.float64).ravel()
    finite = flat[np.isfinite(flat) & (flat != 0)]
    if finite.size == 0:
        return "int", 1
    magnitudes = np.abs(finite)
    largest, smallest = float(magnitudes.max()), float(magnitudes.min())
    integral = bool(np.all(finite == np.ceil(finite)))
    if largest / smallest > 1000.0 or largest > 1e8 or (not integral and smallest < 1e-4):
        style = "sci"
    elif integral:
        style = "int"
    else:
        style = "fixed"
    width = max(len(_render(style, v)) for v in set(finite.tolist()))
    return style, width


def _render(style: str, value) -> str:
    """Format one Python value, unpadded; int mode marks floats with a trailing dot."""
    if style == "sci":
        return f"{value:.4e}"
    if style == "fixed":
        return f"{value:.4f}"
    if style == "int":
        text = f"{value:.0f}"
        return text if text.lstrip("-") in ("inf", "nan") else text + "."
    return str(value)


def _summarized(data: np.ndarray) -> np.ndarray:
    """Keep only the edge items along every long axis: torch sizes the format on them alone."""
    for axis, size in enumerate(data.shape):
        if size > 2 * _EDGEITEMS:
            keep = np.r_[0:_EDGEITEMS, size - _EDGEITEMS : size]
            data = np.take(data, keep, axis=axis)
    return data


def _shown(length: int, summarize: bool):
    """Indices to print along one axis; None stands for the elided middle."""
    if summarize and length > 2 * _EDGEITEMS:
        return [*range(_EDGEITEMS), None, *range(length - _EDGEITEMS, length)]
    return range(length)


def _row(data: np.ndarray, fmt: "_ElementFormat | _ComplexFormat", indent: int, summarize: bool) -> str:
    """A 1-D bracketed row, wrapped so that each line fits the 80-column width."""
    per_line = max(1, (_LINEWIDTH - indent) // (fmt.width + 2))
    shown = _shown(data.shape[0], summarize)
    cells = [_ELLIPSIS_CELL if i is None else fmt(data[i].item()) for i in shown]
    lines = [", ".join(cells[i : i + per_line]) for i in range(0, len(cells), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _block(data: np.ndarray, fmt: "_ElementFormat | _ComplexFormat", indent: int, summarize: bool) -> str:
    """Nest sub-blocks one column deeper, with dim-2 blank lines between them."""
    if data.ndim == 0:
        return fmt(data.item())
    if data.ndim == 1:
        return _row(data, fmt, indent, summarize)
    shown = _shown(data.shape[0], summarize)
    parts = ["..." if i is None else _block(data[i], fmt, indent + 1, summarize) for i in shown]
    separator = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _body(data: np.ndarray) -> str:
    """The bracketed contents, summarised when the tensor has more than 1000 elements."""
    if data.size == 0:
        return "[]"
    summarize = data.size > _THRESHOLD
    shown = _summarized(data) if summarize else data
    fmt = _ComplexFormat(shown) if np.issubdtype(data.dtype, np.complexfloating) else _ElementFormat(shown)
    return _block(data, fmt, _INDENT, summarize)


def _suffixes(data: np.ndarray, autograd_suffix: str | tuple | None) -> list[str]:
    """Size, dtype, then autograd; an empty tensor cannot imply its dtype, so it always states it."""
    suffixes = []
    name = np.dtype(data.dtype).name
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if name != default_float().name:
            suffixes.append("dtype=" + dtype_name(data.dtype))
    elif name not in _implied_dtypes():
        suffixes.append("dtype=" + dtype_name(data.dtype))
    if isinstance(autograd_suffix, tuple):  # grad_fn and a dual tensor's tangent: each wraps on its own
        suffixes.extend(autograd_suffix)
    elif autograd_suffix:
        suffixes.append(autograd_suffix)
    return suffixes


def _attach(text: str, suffixes: list[str]) -> str:
    """Append suffixes, moving one to a new line when it would pass column 80.

    Torch measures the last line plus 2 (room for ", ") against the width,
    which is why an 8-element float32 row already wraps ``requires_grad=True``.
    """
    length = len(text.rsplit("\n", 1)[-1]) + 2
    for suffix in suffixes:
        if length + len(suffix) + 2 > _LINEWIDTH:
            text += ",\n" + " " * _INDENT + suffix
            length = _INDENT + len(suffix)
        else:
            text += ", " + suffix
            length += len(suffix) + 2
    return text + ")"


def format_tensor(data: np.ndarray, autograd_suffix: str | tuple | None = None) -> str:
    """The full ``tensor(...)`` repr of ``data``, in its own dtype.

    ``autograd_suffix`` is what the caller decided to show, e.g.
    ``"grad_fn=<MulBackward0>"`` or ``"requires_grad=True"``, or None, or a
    tuple of such suffixes (a dual tensor's adds ``"tangent=..."``).
    """
    data = np.asarray(data)
    _torch_names(data.dtype)  # fails loudly on dtypes torch lacks
    return _attach(_PREFIX + _body(data), _suffixes(data, autograd_suffix))
