"""torch.optim: six optimizers stepped on the same float64 parameters and gradients, their reprs, state dicts,
argument errors, and the learning rate schedulers' rates epoch by epoch.

Parameters are printed to 10 significant digits: PyTorch's kernels fuse some
multiply-adds, so the last bits may differ while every printed digit agrees.
"""

import warnings

import numpy as np

import torch

rng = np.random.default_rng(0)
start = [rng.normal(size=(2, 3)), rng.normal(size=4)]


def show(values):
    return [float(f"{v:.10g}") for v in np.concatenate([np.ravel(a) for a in values])]


def run(name, steps=4, **options):
    params = [torch.nn.Parameter(torch.tensor(a)) for a in start]
    optimizer = getattr(torch.optim, name)(params, **options)
    for k in range(steps):
        optimizer.zero_grad()
        loss = sum(((p * (k + 1)).sin() + 0.3 * p * p).sum() for p in params)
        loss.backward()
        optimizer.step()
    return optimizer, params


configurations = [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.6), maximize=True)),
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.8, weight_decay=0.2)),
    ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adadelta", dict()), ("Adadelta", dict(lr=0.5, rho=0.3, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, foreach=False)), ("Adam", dict(lr=0.01, foreach=None)),
]
for name, options in configurations:
    optimizer, params = run(name, **options)
    print(name, options, show([p.detach().numpy() for p in params]))
    state = optimizer.state_dict()["state"]
    last = state.get(1, {})
    print("   ", {i: list(s) for i, s in state.items()},
          {k: show([v.numpy()]) for k, v in last.items() if k != "step"}, last.get("step"))

for name in ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"]:
    print(getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], lr=0.5))
p = torch.nn.Parameter(torch.ones(2))
q = torch.nn.Parameter(torch.zeros(3))
optimizer = torch.optim.SGD([{"params": [p]}, {"params": q, "lr": 0.01, "momentum": 0.5}], lr=0.1)
print(optimizer)
print(optimizer.state_dict())
adagrad = torch.optim.Adagrad([p], initial_accumulator_value=0.25)
print(adagrad.state_dict())

p.grad = torch.ones(2)
optimizer.zero_grad(set_to_none=False)
print(p.grad, q.grad)
optimizer.zero_grad()
print(p.grad)

for call in ["torch.optim.SGD([p], lr=-1)", "torch.optim.SGD([p], momentum=-0.5)", "torch.optim.SGD([p], nesterov=True)",
             "torch.optim.Adam([p], betas=(1.0, 0.9))", "torch.optim.Adam([p], betas=(0.9, -0.1))",
             "torch.optim.Adam([p], eps=-1)", "torch.optim.AdamW([p], weight_decay=-1)",
             "torch.optim.RMSprop([p], alpha=-1)", "torch.optim.Adagrad([p], lr_decay=-1)",
             "torch.optim.Adagrad([p], initial_accumulator_value=-1)", "torch.optim.Adadelta([p], rho=1.5)",
             "torch.optim.SGD([], lr=0.1)", "torch.optim.SGD([p * 2], lr=0.1)", "torch.optim.SGD(p, lr=0.1)",
             "torch.optim.SGD({p}, lr=0.1)", "torch.optim.SGD([{'params': [p]}, {'params': [p]}])"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)

# Loading an optimizer's state: the settings and the state come from the file, the parameters stay.
first, params = run("Adam", steps=2, lr=0.05)
saved = first.state_dict()
second = torch.optim.Adam([torch.nn.Parameter(torch.tensor(a)) for a in start], lr=0.3)
second.load_state_dict(saved)
print(second.param_groups[0]["lr"], show([second.state_dict()["state"][0]["exp_avg"].numpy()]),
      second.state_dict()["state"][0]["step"])
for call in ["second.load_state_dict({'state': {}, 'param_groups': []})",
             "second.load_state_dict({'state': {}, 'param_groups': [dict(saved['param_groups'][0], params=[0])]})"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)

schedulers = torch.optim.lr_scheduler
for make in [lambda o: schedulers.StepLR(o, step_size=3, gamma=0.5),
             lambda o: schedulers.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.1),
             lambda o: schedulers.ExponentialLR(o, gamma=0.9),
             lambda o: schedulers.CosineAnnealingLR(o, T_max=4, eta_min=0.001),
             lambda o: schedulers.CosineAnnealingLR(o, T_max=3),
             lambda o: schedulers.LambdaLR(o, lambda epoch: 0.95 ** epoch)]:
    optimizer = torch.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1, momentum=0.9)
    scheduler = make(optimizer)
    rates = [scheduler.get_last_lr()]
    for epoch in range(9):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr())
    print(type(scheduler).__name__, rates)
    print("   ", optimizer.param_groups[0]["initial_lr"], scheduler.last_epoch,
          sorted(k for k in scheduler.state_dict() if not k.startswith("_")))

optimizer = torch.optim.SGD([p], lr=1.0)
scheduler = schedulers.StepLR(optimizer, step_size=2)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    scheduler.step()
    optimizer.step()
    scheduler.step(5)
    print(scheduler.get_last_lr(), scheduler.get_lr())
for warning in caught:
    print(warning.category.__name__, ":", warning.message)
resumed = schedulers.ExponentialLR(optimizer, gamma=0.5, last_epoch=3)
print(resumed.get_last_lr(), resumed.last_epoch)
for call in ["schedulers.StepLR(torch.optim.SGD([p]), 1, last_epoch=2)", "schedulers.StepLR(p, 1)",
             "schedulers.LambdaLR(optimizer, [lambda e: 1, lambda e: 2])"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)

model = torch.nn.Linear(2, 1)
named = torch.optim.SGD(model.named_parameters(), lr=0.1)
print(named)
print(named.state_dict())
print(torch.optim.Adam([{"params": model.named_parameters(), "lr": 0.2}]).param_groups[0]["param_names"])
hidden = model(torch.ones(1, 2))
hidden.retain_grad()
print(len(torch.optim.SGD([hidden], lr=0.1).param_groups[0]["params"]))
for call in ["torch.optim.SGD([{'params': [model.weight]}, {'params': [('b', model.bias)]}])",
             "torch.optim.SGD([('w', model.weight), model.bias])", "torch.optim.SGD([1.0])"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.optim.SGD([model.weight, model.weight], lr=0.1)
print([str(w.message) for w in caught])

for options in [dict(), dict(mode="max", factor=0.5, patience=1, threshold=0.1, threshold_mode="abs", cooldown=1),
                dict(patience=0, min_lr=[0.05, 0.2], factor=0.5), dict(patience=2, eps=0.5)]:
    optimizer = torch.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=0.1)
    plateau = schedulers.ReduceLROnPlateau(optimizer, **options)
    history = []
    for metric in [1.0, 0.9, 0.95, 0.95, 0.9, 0.91, 0.92, 0.93, 0.94, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]:
        plateau.step(metric)
        history.append(plateau.get_last_lr())
    print(options, plateau.best, plateau.num_bad_epochs, plateau.last_epoch, history)
for call in ["schedulers.ReduceLROnPlateau(optimizer, factor=1.0)", "schedulers.ReduceLROnPlateau(optimizer, mode='up')",
             "schedulers.ReduceLROnPlateau(optimizer, threshold_mode='x')",
             "schedulers.ReduceLROnPlateau(optimizer, min_lr=[0.1])"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)
