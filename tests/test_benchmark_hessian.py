"""benchmarks/hessian.py computes the right hessian with every system it times (a small size)."""

import importlib.util
import pathlib

import numpy as np

PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "hessian.py"


def test_every_timed_hessian_equals_the_closed_form():
    spec = importlib.util.spec_from_file_location("hessian_benchmark", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X, y, w = module.make_data(12, samples=30)
    expected = module.closed_form(w, X, y)
    found, extra = module.systems(w, X, y)
    for name, run in found.items():
        np.testing.assert_allclose(run(), expected, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(extra["astgrad.hvp (one column)"](), expected @ np.ones(12), rtol=1e-9)
