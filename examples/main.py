"""astgrad's main example: the PyTorch autograd tutorial on the taped Tensor.

The tutorial's function, mean(3 * (x + 2)**2), is differentiated by the
taped engine exactly as PyTorch's autograd does it, printed as PyTorch
prints it; the gradient is checked against a central finite difference.
"""
import numpy as np

import astgrad


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def finite_difference(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def main():
    print("== taped mode (define-by-run, PyTorch's semantics) ==")
    x = astgrad.ones(2, 2, requires_grad=True)
    out = tutorial(x)
    print("x   =", x)
    print("out =", out)
    node = out.grad_fn
    chain = []
    while node is not None:
        chain.append(node.name())
        node = node.next_functions[0][0] if node.next_functions else None
    print("grad_fn chain:", " -> ".join(chain))
    out.backward()
    print("x.grad =", x.grad)

    print("\n== check against finite differences (float64) ==")
    numeric = finite_difference(lambda a: tutorial(a), np.ones((2, 2)))
    taped = x.grad.numpy()
    print("numeric =", numeric.tolist())
    print("taped   =", taped.tolist())
    agree = np.allclose(taped, numeric, rtol=1e-5)
    print("agree:", agree)
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
