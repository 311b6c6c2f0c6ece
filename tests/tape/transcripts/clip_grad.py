"""torch.nn.utils.clip_grad_norm_ and clip_grad_value_: returned norms, clipped gradients, errors."""

import torch

clip = torch.nn.utils
p = torch.nn.Parameter(torch.ones(3))
q = torch.nn.Parameter(torch.ones(2, 2, dtype=torch.float64))
r = torch.nn.Parameter(torch.ones(2))
p.grad, q.grad = torch.tensor([3.0, 4.0, 0.0]), torch.tensor([[1.0, -2.0], [0.5, 0.0]], dtype=torch.float64)
print(clip.clip_grad_norm_([p, q, r], 10.0), p.grad, q.grad)
print(clip.clip_grad_norm_(iter([p, q]), 1.0), p.grad, q.grad)
print(clip.clip_grad_norm_(p, 0.5, norm_type="inf", foreach=True), p.grad)
print(clip.clip_grad_norm_(q, 0.5, norm_type=1), q.grad)
print(clip.clip_grad_norm_([r], 1.0), clip.clip_grad_norm_([], 1.0), r.grad)
s = torch.nn.Parameter(torch.ones(2))
s.grad = torch.tensor([float("inf"), 1.0])
try:
    clip.clip_grad_norm_([s], 1.0, error_if_nonfinite=True)
except RuntimeError as error:
    print(error)
print(clip.clip_grad_norm_([s], 1.0), s.grad)
p.grad = torch.tensor([0.5, -2.0, 3.0])
print(clip.clip_grad_value_([p, r], 1.0), p.grad, r.grad)
x = torch.tensor([1.0, 2.0], requires_grad=True)
(x * x).sum().backward()
print(clip.clip_grad_norm_([x], 1.0).grad_fn, x.grad, x.grad.grad_fn)
