"""Every entry of the derivative table through the generated engine.

Each sample case of ``samples.py`` becomes a module-level function (the
transformer reads source), differentiated by ``astgrad.grad`` and compared
with central differences in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad

from .samples import CASES, case_id
from .test_table import draw, outputs, reference_gradients, weights_for


# ------------------------------------------------------------ generated engine


def _literal(value) -> str:
    """Source text for a keyword value (the transformer reads it as a constant)."""
    if isinstance(value, float) and np.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) else f"[{inner}]"
    return repr(value)


def parameters(case, args, diff):
    """``(params, call_args)``: the parameters of a function calling the case's entry (a list differentiated
    item by item is one parameter per item, the call building the list) and the arguments of that call."""
    params, call_args = [], []
    for i, (arg, is_diff) in enumerate(zip(args, diff)):
        if isinstance(arg, list) and is_diff:
            names = [f"a{i}_{j}" for j in range(len(arg))]
            params += names
            call_args.append("[" + ", ".join(names) + "]")
        else:
            params.append(f"a{i}")
            call_args.append(f"a{i}")
    call_args += [f"{k}={_literal(v)}" for k, v in case.kwargs.items()]
    return params, call_args


def _case_source(index, case, args, diff, n_outputs):
    """A module-level function calling the entry and weighting its outputs into a scalar."""
    params, call_args = parameters(case, args, diff)
    weights = [f"w{k}" for k in range(n_outputs)]
    lines = [f"def case_{index}({', '.join(params + weights)}):",
             f"    out = F{index}({', '.join(call_args)})"]
    if n_outputs == 1 and not isinstance(case.function(*args, **case.kwargs), (tuple, list)):
        lines.append("    return np.sum(out * w0)")
    else:
        terms = [f"np.sum(out[{k}] * w{k})" for k in range(n_outputs)]
        lines.append("    return " + " + ".join(terms))
    return "\n".join(lines) + "\n"


def build_module(cases, directory, name):
    """One importable module holding a wrapper function per case."""
    import importlib.util

    sources = ["import numpy as np\n"]
    for index, case in enumerate(cases):
        args, diff = draw(case)
        n_outputs = len(outputs(case.function(*args, **case.kwargs)))
        sources.append(_case_source(index, case, args, diff, n_outputs))
    path = directory / f"{name}.py"
    path.write_text("\n\n".join(sources))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    for index, case in enumerate(cases):  # a wrapper the tape needs (samples_scipy.taped) names what code calls
        setattr(module, f"F{index}", getattr(case.function, "generated_call", case.function))
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated_module(tmp_path_factory):
    return build_module(CASES, tmp_path_factory.mktemp("table"), "table_cases")


def generated_against_numeric(index, module, dtype, cases=CASES):
    """(gradients from the generated adjoint, the reference in float64, the wrt arguments).

    The reference is central differences, or a case's ``expected`` gradients (for unit weights).
    """
    case = cases[index]
    args, diff = draw(case)
    weights = weights_for(outputs(case.function(*args, **case.kwargs)), case)
    numeric = [g for g in reference_gradients(case, args, diff, weights) if g is not None]
    flat_args, wrt = [], []
    for arg, is_diff in zip(args, diff):
        parts = arg if isinstance(arg, list) and is_diff else [arg]
        for part in parts:
            if is_diff:
                wrt.append(len(flat_args))
                if isinstance(part, np.ndarray):
                    part = part.astype(dtype)
            flat_args.append(part)
    function = getattr(module, f"case_{index}")
    result = list(astgrad.grad(function, wrt=tuple(wrt))(*flat_args, *weights))  # a tuple for a tuple wrt
    flat_numeric = [g for n in numeric for g in (n if isinstance(n, list) else [n])]
    assert len(result) == len(flat_numeric)
    return result, flat_numeric, [flat_args[i] for i in wrt]


GENERATED = [i for i, c in enumerate(CASES) if c.generated]


@pytest.mark.parametrize("index", GENERATED, ids=[case_id(CASES[i]) for i in GENERATED])
def test_generated_matches_finite_differences(index, generated_module):
    result, numeric, _ = generated_against_numeric(index, generated_module, np.float64)
    for got, want in zip(result, numeric):
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index", GENERATED, ids=[case_id(CASES[i]) for i in GENERATED])
def test_generated_float32_matches_finite_differences(index, generated_module):
    result, numeric, wrt_args = generated_against_numeric(index, generated_module, np.float32)
    for got, want, arg in zip(result, numeric, wrt_args):
        if isinstance(arg, np.ndarray):
            assert np.asarray(got).dtype == np.float32, "a float32 argument gets a float32 gradient"
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=2e-3, atol=2e-3)
