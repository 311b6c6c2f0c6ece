"""torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap and functional_call."""

import torch

functional_call, grad, grad_and_value = torch.func.functional_call, torch.func.grad, torch.func.grad_and_value
hessian, jacfwd, jacrev, jvp, vjp, vmap = (torch.func.hessian, torch.func.jacfwd, torch.func.jacrev, torch.func.jvp,
                                           torch.func.vjp, torch.func.vmap)


def show(label, value):
    """Print a result tree; + 0.0 makes -0.0 and 0.0 print alike (the order of products differs between engines)."""
    if isinstance(value, torch.Tensor):
        value = value.detach() + 0.0 if value.is_floating_point() else value
    elif isinstance(value, dict):
        value = {k: _plain(v) for k, v in value.items()}
    elif isinstance(value, (tuple, list)):
        value = type(value)(_plain(v) for v in value)
    print(label, value)


def _plain(value):
    if isinstance(value, torch.Tensor):
        return value.detach() + 0.0 if value.is_floating_point() else value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def attempt(label, thunk):
    try:
        show(label, thunk())
    except (RuntimeError, ValueError, TypeError) as error:
        print(label, type(error).__name__ + ":", error)


x = torch.tensor([0.5, -1.0, 2.0])
y = torch.tensor([1.5, 0.25, -0.75])
v = torch.tensor([1.0, 0.0, -1.0])


def f(a, b):
    return (torch.sin(a) * b + a ** 2).sum()


def g(a, b):
    return torch.sin(a) * b + a * b.exp()


print("-- grad")
show("grad", grad(f)(x, y))
show("grad argnums=1", grad(f, argnums=1)(x, y))
show("grad argnums=(0, 1)", grad(f, argnums=(0, 1))(x, y))
show("grad argnums=-1", grad(f, argnums=-1)(x, y))
show("grad has_aux", grad(lambda a: ((a ** 3).sum(), {"sq": a ** 2}), has_aux=True)(x))
show("grad_and_value", grad_and_value(f)(x, y))
show("grad_and_value has_aux", grad_and_value(lambda a: ((a ** 3).sum(), a.cos()), has_aux=True)(x))
show("grad dict", grad(lambda d: (d["w"] * d["b"][0] ** 2).sum())({"w": x, "b": [y, y]}))
show("grad unused", grad(lambda a, b: (a * 2).sum(), argnums=(0, 1))(x, y))
show("grad constant", grad(lambda a: torch.tensor(3.0))(x))
show("grad of grad", grad(grad(lambda a: a ** 3 + a.sin()))(torch.tensor(0.7)))
show("grad kwargs", grad(lambda a, scale=1.0: (a * scale).sum())(x, scale=3.0))
attempt("grad vector output", lambda: grad(lambda a: a * 2)(x))
attempt("grad float output", lambda: grad(lambda a: 3.0)(x))
attempt("grad has_aux single", lambda: grad(lambda a: a.sum(), has_aux=True)(x))
attempt("grad argnums out of range", lambda: grad(f, argnums=2)(x, y))
attempt("grad argnums empty", lambda: grad(f, argnums=())(x, y))
attempt("grad argnums repeated", lambda: grad(f, argnums=(0, 0))(x, y))
attempt("grad argnums list", lambda: grad(f, argnums=[0, 1])(x, y))
attempt("grad integer input", lambda: grad(lambda a: a.sum())(torch.tensor([1, 2])))
attempt("grad float input", lambda: grad(lambda a: a * 2)(3.0))
attempt("grad in-place on input", lambda: grad(lambda a: a.add_(1).sum())(x.clone()))

w = torch.tensor([1.0, -1.0, 0.5], requires_grad=True)
captured = grad(lambda a: (a * w * a).sum())(x)
print("grad captured requires_grad", captured.requires_grad, type(captured.grad_fn).__name__)
captured.sum().backward()
print("w.grad", w.grad)
plain = grad(lambda a: (a * a).sum())(x)
print("grad plain requires_grad", plain.requires_grad, plain.grad_fn)
with torch.no_grad():
    print("grad under no_grad requires_grad", grad(lambda a: (a * w).sum())(x).requires_grad)
leaf = x.clone().requires_grad_()
through = grad(lambda a: (a ** 3).sum())(leaf)
print("grad of a leaf that requires grad", through.requires_grad)
show("  its gradient", torch.autograd.grad(through.sum(), leaf)[0])

print("-- vjp")
out, vjp_fn = vjp(torch.sin, x)
show("vjp out", out)
show("vjp_fn", vjp_fn(v))
print("vjp_fn returns", type(vjp_fn(v)).__name__, len(vjp_fn(v)))
out, vjp_fn = vjp(g, x, y)
show("vjp two inputs", vjp_fn(v))
out, vjp_fn = vjp(lambda a: (a.sin(), a * 2), x)
show("vjp two outputs", vjp_fn((v, y)))
out, vjp_fn, aux = vjp(lambda a: (a.exp(), a.cos()), x, has_aux=True)
show("vjp has_aux", (out, aux, vjp_fn(v)))
out, vjp_fn = vjp(lambda d: {"s": d["a"] * d["b"]}, {"a": x, "b": y})
show("vjp dict", vjp_fn({"s": v}))
attempt("vjp_fn tuple for one output", lambda: vjp(torch.sin, x)[1]((v,)))
attempt("vjp_fn list for one output", lambda: vjp(torch.sin, x)[1]([v]))
attempt("vjp_fn one for two outputs", lambda: vjp(lambda a: (a, a), x)[1](v))
attempt("vjp_fn wrong shape", lambda: vjp(torch.sin, x)[1](torch.ones(2)))
attempt("vjp has_aux single", lambda: vjp(torch.sin, x, has_aux=True))
attempt("vjp float output", lambda: vjp(lambda a: 3.0, x))
attempt("vjp None output", lambda: vjp(lambda a: None, x))
attempt("vjp bool output", lambda: vjp(lambda a: a > 0, x))

print("-- jvp")
show("jvp", jvp(torch.sin, (x,), (v,)))
show("jvp two inputs", jvp(g, (x, y), (v, y)))
show("jvp has_aux", jvp(lambda a: (a.exp(), a.cos()), (x,), (v,), has_aux=True))
show("jvp dict output", jvp(lambda a, b: {"p": a * b, "q": a.sum()}, (x, y), (v, v)))
show("jvp constant output", jvp(lambda a: torch.ones(2), (x,), (v,)))
show("jvp bool output", jvp(lambda a: a > 0, (x,), (v,)))
show("jvp of grad (Hessian-vector product)", jvp(grad(lambda a: (a ** 3).sum() * a[0]), (x,), (v,)))
attempt("jvp primals not a tuple", lambda: jvp(torch.sin, x, v))
attempt("jvp strict", lambda: jvp(lambda a: torch.ones(2), (x,), (v,), strict=True))
attempt("jvp has_aux single", lambda: jvp(torch.sin, (x,), (v,), has_aux=True))
attempt("jvp tangent of another size", lambda: jvp(torch.sin, (x,), (torch.ones(2),)))
attempt("jvp float tangent", lambda: jvp(torch.sin, (x,), (1.0,)))
attempt("jvp no primals", lambda: jvp(torch.sin, (), ()))
attempt("jvp float output", lambda: jvp(lambda a: 3.0, (x,), (v,)))

print("-- jacrev, jacfwd, hessian")
for name, jac in (("jacrev", jacrev), ("jacfwd", jacfwd)):
    show(name, jac(g)(x, y))
    show(name + " argnums=(0, 1)", jac(g, argnums=(0, 1))(x, y))
    show(name + " two outputs", jac(lambda a: (a.sin(), a.sum()))(x))
    show(name + " has_aux", jac(lambda a: (a.sin(), a.cos()), has_aux=True)(x))
    show(name + " dicts", jac(lambda d: {"o": d["a"] * d["b"]})({"a": x, "b": y}))
    show(name + " matrix input", jac(lambda m: m @ y)(torch.outer(x, y)))
    attempt(name + " float output", lambda: jac(lambda a: 3.0)(x))
attempt("jacrev bool output", lambda: jacrev(lambda a: a > 0)(x))
attempt("jacrev chunk_size=0", lambda: jacrev(g, chunk_size=0)(x, y))
show("jacrev chunk_size=1", jacrev(g, chunk_size=1)(x, y))
attempt("jacfwd random draw", lambda: jacfwd(lambda a: a * torch.rand(3))(x))
attempt("jacfwd bad randomness", lambda: jacfwd(torch.sin, randomness="bogus")(x))
print("jacfwd randomness=same shape", jacfwd(lambda a: a * torch.rand(3), randomness="same")(x).shape)
show("hessian", hessian(lambda a: (a ** 3).sum() + a[0] * a[1])(x))
show("hessian argnums=(0, 1)", hessian(lambda a, b: (a ** 2 * b).sum(), argnums=(0, 1))(x, y))
print("hessian of a vector", hessian(lambda a: a ** 3)(x).shape)
show("jacrev of jacrev", jacrev(jacrev(lambda a: (a.sin() * a).sum()))(x))

print("-- vmap")
X = torch.arange(6.0).reshape(2, 3)
show("vmap", vmap(lambda a: a * 2)(X))
show("vmap in_dims=(0, None)", vmap(lambda a, b: a * b, in_dims=(0, None))(X, y))
show("vmap in_dims=1", vmap(lambda a: a.sum(), in_dims=1)(X))
show("vmap in_dims=-1", vmap(lambda a: a, in_dims=-1)(X))
show("vmap out_dims=1", vmap(lambda a: a * 2, out_dims=1)(X))
show("vmap out_dims tuple", vmap(lambda a: (a * 2, a.sum()), out_dims=(1, 0))(X))
show("vmap dict output", vmap(lambda a: {"s": a.sum(), "p": a * 2})(X))
show("vmap dict in_dims", vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))({"a": X, "b": y}))
show("vmap kwargs", vmap(lambda a, k=1.0: a * k)(X, k=2.0))
show("vmap unmapped output", vmap(lambda a: y, out_dims=None)(X))
show("vmap captured output", vmap(lambda a: y)(X))
show("vmap indexing", vmap(lambda a: a[0])(X))
show("vmap of vmap", vmap(vmap(lambda a: a * 2))(X))
show("vmap of grad", vmap(grad(lambda a: (a ** 2).sum()))(X))
show("grad of vmap", grad(lambda a: vmap(lambda r: (r ** 3).sum())(a).sum())(X))
show("vmap of jacrev", vmap(jacrev(torch.sin))(X))
show("vmap chunk_size=1", vmap(lambda a: a, chunk_size=1)(X))
print("vmap randomness=same shape", vmap(lambda a: a * torch.rand(3), randomness="same")(X).shape)
attempt("vmap sizes differ", lambda: vmap(lambda a, b: a + b)(X, torch.ones(3, 3)))
attempt("vmap in_dims too long", lambda: vmap(lambda a, b: a + b, in_dims=(0, None, 0))(X, y))
attempt("vmap in_dim out of range", lambda: vmap(lambda a: a, in_dims=2)(X))
attempt("vmap in_dims None", lambda: vmap(lambda a: a, in_dims=None)(X))
attempt("vmap in_dims list", lambda: vmap(lambda a: a, in_dims=[0])(X))
attempt("vmap float output", lambda: vmap(lambda a: 3.0)(X))
attempt("vmap batched output with out_dims=None", lambda: vmap(lambda a: a, out_dims=None)(X))
attempt("vmap out_dims short", lambda: vmap(lambda a: (a, a), out_dims=(0,))(X))
attempt("vmap bad randomness", lambda: vmap(lambda a: a, randomness="x")(X))
attempt("vmap random draw", lambda: vmap(lambda a: a * torch.rand(3))(X))
attempt("vmap chunk_size=0", lambda: vmap(lambda a: a, chunk_size=0)(X))
attempt("vmap float input", lambda: vmap(lambda a: a)(3.0))
attempt("vmap no inputs", lambda: vmap(lambda: x)())
attempt("vmap int input", lambda: vmap(lambda a, n: a * n)(X, 3))
attempt("vmap 0-d input", lambda: vmap(lambda a: a)(torch.tensor(3.0)))


def with_backward(a):
    (a * w).sum().backward()
    return a


attempt("backward inside vmap", lambda: vmap(with_backward)(X))
attempt("backward inside grad", lambda: grad(lambda a: with_backward(a).sum())(x))

print("-- functional_call")
model = torch.nn.Linear(3, 2)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[0.5, -0.5, 1.0], [0.25, 0.75, -1.0]]))
    model.bias.copy_(torch.tensor([0.1, -0.2]))
params = {"weight": torch.ones(2, 3), "bias": torch.zeros(2)}
show("functional_call", functional_call(model, params, (x,)))
show("functional_call one arg", functional_call(model, params, x))
show("functional_call kwargs", functional_call(model, params, (), {"input": x}))
show("functional_call tuple of dicts", functional_call(model, ({"weight": torch.ones(2, 3)}, {"bias": torch.ones(2)}), (x,)))
show("functional_call some", functional_call(model, {"weight": torch.ones(2, 3)}, (x,)))
show("model after", model(x))
attempt("functional_call strict missing", lambda: functional_call(model, {"weight": torch.ones(2, 3)}, (x,), strict=True))
attempt("functional_call strict unexpected", lambda: functional_call(
    model, {"weight": torch.ones(2, 3), "bias": torch.zeros(2), "foo": torch.ones(1)}, (x,), strict=True))
attempt("functional_call repeated keys", lambda: functional_call(
    model, ({"weight": torch.ones(2, 3)}, {"weight": torch.zeros(2, 3)}), (x,)))
attempt("functional_call not a dict", lambda: functional_call(model, 3, (x,)))


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2, bias=False)
        self.b = self.a

    def forward(self, z):
        return self.b(self.a(z))


tied = Tied()
print("tied names", [name for name, _ in tied.named_parameters()])
show("tied a", functional_call(tied, {"a.weight": torch.eye(2) * 2}, (torch.ones(2),)))
show("tied b", functional_call(tied, {"b.weight": torch.eye(2) * 3}, (torch.ones(2),)))
show("tie_weights=False", functional_call(tied, {"a.weight": torch.eye(2) * 2}, (torch.ones(2),), tie_weights=False))
attempt("tied two values", lambda: functional_call(
    tied, {"a.weight": torch.eye(2) * 2, "b.weight": torch.eye(2)}, (torch.ones(2),)))

mlp = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
with torch.no_grad():
    for k, p in enumerate(mlp.parameters()):
        p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (k + 1) / 4)
weights = {k: p.detach() for k, p in mlp.named_parameters()}
inputs = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.0, 1.0, 1.0]])
targets = torch.tensor([1.0, -1.0, 0.5])


def loss(weights, xb, yb):
    out = functional_call(mlp, weights, (xb.unsqueeze(0),))
    return ((out.squeeze() - yb) ** 2)


show("per-example gradients", vmap(grad(loss), in_dims=(None, 0, 0))(weights, inputs, targets))
attempt("jvp tangents of another structure", lambda: jvp(g, (x, y), [x, y]))
attempt("vjp_fn dict keys differ", lambda: vjp(lambda d: {"s": d["a"]}, {"a": x})[1]({"t": v}))
