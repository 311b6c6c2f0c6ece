"""``functional_call``: a Module called with other tensors in place of its parameters, put back afterwards.

Each dotted name (``"0.weight"``) names an attribute of a submodule; the
given tensor takes its place for the call and the original comes back when
the call returns or raises.  Tied parameters (one Parameter reachable under
several names) follow PyTorch: with ``tie_weights`` a value given for one
name replaces every name of it, and two different values for one tied
parameter are an error.
"""

from __future__ import annotations

from collections.abc import Sequence

_MISSING = object()


def _merged(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                     f"{type(parameter_and_buffer_dicts)}")


def _all_parameter_names(module) -> dict:
    """``{dotted name: tensor}`` for every name a parameter or buffer is reachable under (tied ones under each)."""
    names = {}
    for prefix, sub in module.named_modules():
        for store in ("_parameters", "_buffers"):
            for name, p in sub.__dict__.get(store, {}).items():
                if p is not None:
                    names[f"{prefix}.{name}" if prefix else name] = p
    return names


def _untied(module, values: dict) -> dict:
    """``values`` with every name of a tied parameter given the value given for one of its names."""
    names = _all_parameter_names(module)
    groups: dict = {}
    for name, p in names.items():
        groups.setdefault(id(p), []).append(name)
    untied = dict(values)
    for name in values:
        if name not in names:
            continue
        tied = groups[id(names[name])]
        if len({id(values[n]) for n in tied if n in values}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied)}, which are tied. Consider "
                             "using tie_weights=False")
        for n in tied:
            untied[n] = values[name]
    return untied


def _owner(module, dotted: str):
    """``(submodule, attribute)`` a dotted name refers to."""
    *path, attribute = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    return module, attribute


def _registry(module, attribute):
    """The module's store (its parameters or its buffers) that holds ``attribute``, or None."""
    for store in ("_parameters", "_buffers"):
        registered = module.__dict__.get(store, {})
        if attribute in registered:
            return registered
    return None


def _swap(module, attribute, value):
    """Put ``value`` in place of the attribute; return what was there (``_MISSING`` if nothing)."""
    registered = _registry(module, attribute)
    if registered is not None:
        previous = registered[attribute]
        registered[attribute] = value
        return previous
    previous = module.__dict__.get(attribute, _MISSING)
    object.__setattr__(module, attribute, value)
    return previous


def _restore(module, attribute, previous) -> None:
    registered = _registry(module, attribute)
    if registered is not None:
        registered[attribute] = previous
    elif previous is _MISSING:
        module.__dict__.pop(attribute, None)
    else:
        object.__setattr__(module, attribute, previous)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters (module docstring)."""
    values = _merged(parameter_and_buffer_dicts)
    if tie_weights:
        values = _untied(module, values)
    if strict:
        expected = _all_parameter_names(module)
        unexpected = [k for k in values if k not in expected]
        missing = [k for k in expected if k not in values]
        messages = []
        if unexpected:
            messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if messages:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(messages))
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    swapped = []
    try:
        for name, value in values.items():
            owner, attribute = _owner(module, name)
            swapped.append((owner, attribute, _swap(owner, attribute, value)))
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attribute, previous in reversed(swapped):
            _restore(owner, attribute, previous)
