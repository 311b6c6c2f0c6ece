"""An error raised inside generated code names the user's file, line and source.

numpy raising in the primal (a shape mismatch in the user's code), a rule
refusing in the adjoint (the singular vectors of
an svd with equal singular values), a shape computed alone by the
optimiser: each exception keeps its type and message and gains a note that
points at the user's line, not only at ``<astgrad ...>``, line 7.
"""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import astgrad

HERE = __file__


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _note(exc_info):
    notes = getattr(exc_info.value, "__notes__", [])
    assert len(notes) == 1, notes
    return notes[0]


def project(a, b):
    c = np.tanh(a)
    return c @ b


def calls_project(x, w):
    y = np.sin(x)
    z = project(y, w)
    return np.sum(z * z)


def test_a_shape_mismatch_in_a_callee_names_the_callees_line():
    with pytest.raises(ValueError, match="matmul") as info:
        astgrad.grad(calls_project)(np.ones((2, 3)), np.ones((4, 2)))
    note = _note(info)
    assert f'File "{HERE}", line {_line_of(project, "c @ b")}' in note
    assert "return c @ b" in note and "running" in note
    assert "the generated grad of calls_project" in note


def singular_vectors(x):
    u, s, vh = np.linalg.svd(x)
    return np.sum(u * 2.0)


def test_a_rule_refusing_in_the_adjoint_names_the_line_it_differentiates():
    with pytest.raises(ValueError, match="singular values are equal") as info:
        astgrad.grad(singular_vectors)(np.eye(3))  # the svd rule refuses when the gradient reaches u
    note = _note(info)
    assert f'line {_line_of(singular_vectors, "np.linalg.svd")}' in note
    assert "computing the gradient of" in note and "u, s, vh = np.linalg.svd(x)" in note


def broadcast_mismatch(x, v):
    y = np.exp(x)
    return np.sum(y + v)          # only the shape of y + v is computed: the error is in that shape


@pytest.mark.parametrize("call", [
    pytest.param(lambda x, v: astgrad.grad(broadcast_mismatch)(x, v), id="grad"),
    pytest.param(lambda x, v: astgrad.grad(broadcast_mismatch)(x, v=v), id="general-entry"),
    pytest.param(lambda x, v: astgrad.value_and_grad(broadcast_mismatch, wrt=(0, 1))(x, v), id="value_and_grad"),
])
def test_a_broadcast_mismatch_names_the_users_line(call):
    with pytest.raises(ValueError, match="broadcast") as info:
        call(np.ones(3), np.ones(4))
    assert f'line {_line_of(broadcast_mismatch, "y + v")}' in _note(info)


def vector_mismatch(x, m):
    return np.tanh(x @ m)


def test_vjp_errors_are_located_too():
    with pytest.raises(ValueError) as info:
        astgrad.vjp(vector_mismatch)(np.ones(3), np.ones((2, 2)), np.ones(2))
    assert f'line {_line_of(vector_mismatch, "x @ m")}' in _note(info)


def in_a_loop(x, ms):
    for m in ms:
        x = np.tanh(m @ x)
    return np.sum(x)


def test_an_error_in_a_later_iteration_names_the_loop_body_line():
    ms = [np.ones((3, 3)), np.ones((2, 2))]
    with pytest.raises(ValueError) as info:
        astgrad.grad(in_a_loop)(np.ones(3), ms)
    assert f'line {_line_of(in_a_loop, "m @ x")}' in _note(info)


class Model:
    def __init__(self):
        self.w = np.ones((5, 2))

    def loss(self, x):
        h = x @ self.w
        return np.sum(h)


def test_a_method_names_its_line_with_its_text():
    with pytest.raises(ValueError) as info:
        astgrad.grad(Model().loss)(np.ones(3))
    note = _note(info)
    assert f'line {_line_of(Model.loss, "x @ self.w")}' in note and "h = x @ self.w" in note


def test_the_exception_keeps_its_type_and_message():
    with pytest.raises(ValueError) as located:
        astgrad.grad(calls_project)(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError) as plain:
        np.tanh(np.sin(np.ones((2, 3)))) @ np.ones((4, 2))
    assert str(located.value) == str(plain.value)


def test_a_plain_traceback_prints_the_note(tmp_path):
    # outside pytest and IPython, which print notes themselves: Python's own traceback, on every version
    script = tmp_path / "mismatch.py"
    script.write_text("import numpy as np\nimport astgrad\n\n\ndef f(x):\n    y = np.sin(x)\n    return np.sum(y @ x)\n\n\n"
                      "astgrad.grad(f)(np.ones((2, 3)))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 1 and "ValueError: matmul" in out.stderr
    assert "astgrad: raised in the generated grad of f (line" in out.stderr
    assert f'File "{script}", line 7\n    return np.sum(y @ x)' in out.stderr


def test_errors_outside_generated_code_get_no_note():
    with pytest.raises(TypeError) as info:
        astgrad.grad(calls_project)(np.ones(3))  # a missing argument: raised before any generated line
    assert not getattr(info.value, "__notes__", [])


def test_a_second_failing_call_is_located_again_once():
    g = astgrad.grad(broadcast_mismatch)
    for _ in range(2):
        with pytest.raises(ValueError) as info:
            g(np.ones(3), np.ones(4))
        _note(info)
