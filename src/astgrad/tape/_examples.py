"""One example at a time: what a ``vmap`` that loops over its batch needs from the tape.

``torch.func.vmap`` runs the user's function once on batched tensors; the
tape runs it once per example instead.  Two things differ between the two
and would change numbers without an error, so the tape guards them while an
example runs:

* **writes**: a write into a tensor made before the example began (a
  captured tensor, a parameter, the mapped input itself) would happen once
  per example instead of once.  Inside :meth:`ExampleLoop.example` only
  tensors made in that example (and their views) may be written; any other
  write, in place or ``.data = ...``, raises ``_modes.WRITE_REFUSED``
  (``_modes.check_write``, which the in-place door and ``Tensor.data``
  call).  Tensors made in the example are told apart by their version
  counter: while the example runs, new counters are of a class made for it.
* **random draws**, checked where they are drawn (module ``_factories``):
  ``randomness="error"`` refuses every draw (PyTorch's message); ``"same"``
  puts the generator back to one state before each example, so every
  example draws the same numbers; ``"different"`` lets the examples draw in
  turn.  A draw from an explicit ``generator=`` is refused under ``"same"``
  (its state is not ours to rewind).

``backward()`` is refused inside any torch.func transformation, as in
PyTorch (it would write ``.grad`` once per call or per example).

The guards are per thread, as the grad mode is, but the version-counter
class is the module's: a tensor another thread makes while an example runs
counts as made in the example.
"""

from __future__ import annotations

import contextlib

from . import _factories, _modes, _tensor

BACKWARD_REFUSED = ("backward() called inside a functorch transform. This is not supported, please use functorch.grad "
                    "or functorch.vjp instead or call backward() outside of functorch transforms.")
RANDOMNESS = ("error", "different", "same")


def check_backward() -> None:
    """``backward()`` inside a transformation would write ``.grad`` once per call (per example): refused, as in PyTorch."""
    if _modes._state.transforms:
        raise RuntimeError(BACKWARD_REFUSED)


class inside_transform:
    """``with inside_transform():`` around a torch.func transformation's call of the user's function."""

    def __enter__(self) -> None:
        _modes._state.transforms += 1

    def __exit__(self, *exc) -> None:
        _modes._state.transforms -= 1


class ExampleLoop:
    """``with ExampleLoop(randomness) as loop:`` then ``with loop.example():`` around each example's call."""

    def __init__(self, randomness: str):
        self.randomness = randomness

    def __enter__(self) -> "ExampleLoop":
        self._previous_randomness = _modes._state.randomness
        _modes._state.randomness = self.randomness
        self._state = _factories.generator_state() if self.randomness == "same" else None
        return self

    def __exit__(self, *exc) -> None:
        _modes._state.randomness = self._previous_randomness

    @contextlib.contextmanager
    def example(self):
        """One example's scope: fresh tensors may be written, others not; draws as ``randomness`` says."""
        if self._state is not None:
            _factories.set_generator_state(self._state)
        fresh: type = type("Version", (_tensor.Version,), {"__slots__": ()})
        before_class, before_fresh = _tensor.Version, _modes._state.fresh_version
        _tensor.Version, _modes._state.fresh_version = fresh, fresh  # type: ignore[misc, assignment]  # swapped for one scope
        try:
            with inside_transform():
                yield
        finally:
            _tensor.Version, _modes._state.fresh_version = before_class, before_fresh  # type: ignore[misc]
