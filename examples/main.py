"""astgrad's main example: one function, two engines, three opinions.

The PyTorch autograd tutorial's function, mean(3 * (x + 2)**2), is
differentiated

* by source transformation: ``astgrad.grad`` writes the adjoint as Python
  source, printed below;
* on the tape: the same function called with a Tensor records a graph,
  printed as PyTorch prints its ``grad_fn`` chain, and ``backward()`` fills
  ``x.grad``;
* numerically, by central differences;

and ``astgrad.check_grads`` compares the three.
"""
import numpy as np

import astgrad


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def grad_fn_chain(tensor):
    names, node = [], tensor.grad_fn
    while node is not None:
        names.append(node.name())
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return " -> ".join(names)


def main():
    print("== generated mode: the adjoint astgrad writes ==")
    dtutorial = astgrad.grad(tutorial)
    print(dtutorial.source)
    generated = dtutorial(np.ones((2, 2)))
    print("dtutorial(ones(2, 2)) =", generated.tolist())

    print("\n== taped mode: PyTorch's autograd, printed as PyTorch prints ==")
    x = astgrad.ones(2, 2, requires_grad=True)
    out = tutorial(x)
    print("out =", out)
    print("grad_fn chain:", grad_fn_chain(out))
    out.backward()
    print("x.grad =", x.grad)

    print("\n== the three opinions ==")
    report = astgrad.check_grads(tutorial, np.ones((2, 2)))
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
