"""Checkpointing: the markers a user writes, and what generated code calls to recompute instead of save.

``checkpoint(g)`` marks a call of a user function whose forward half saves
only its arguments: the reverse sweep runs g's forward half again from
them, then its backward half.  ``checkpointed(iterable)`` marks a ``for``
loop whose reverse sweep keeps the loop's state once every ``every``
steps (about the square root of the steps by default) and runs each
segment's forward half again before its backward half.  Outside a
differentiated function both are what they wrap: the call runs g, the
loop runs over the iterable.

Recomputing is exact only for code that computes the same numbers again
from the same inputs: the transformer refuses a checkpointed function or
loop that draws random numbers or writes state its calls do not return
(reruns.py reads the code), and the generated code
refuses a random generator among a checkpointed call's arguments or a
loop's state (``fixed_state``).
"""

from __future__ import annotations

import copy
from typing import Callable, Iterable
import functools
import math
import random

import numpy as np

GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)


class Checkpointed:
    """``checkpoint(g)``: calls g; inside a differentiated function, its call's intermediates are recomputed."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"astgrad.checkpoint: expected a function, got {type(fn).__name__}")
        self.__wrapped__ = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self):
        return f"astgrad.checkpoint({getattr(self.__wrapped__, '__qualname__', self.__wrapped__)!r})"


def checkpoint(fn: Callable) -> Callable:
    """Mark ``fn`` so that a differentiated function calling it saves only the call's arguments.

    ``y = astgrad.checkpoint(step)(y, p)`` (or ``@astgrad.checkpoint`` on
    ``step``) inside a function given to ``grad``: the forward sweep keeps
    the arguments, not step's intermediates; the reverse sweep runs step's
    forward half again from them, then its backward half.  Memory for
    time: one more forward run of step per call.  Called anywhere else, it
    is ``fn`` itself.
    """
    if isinstance(fn, Checkpointed):
        return fn
    return Checkpointed(fn)


def checkpointed(iterable: Iterable, every: int | None = None, snapshots: int | None = None) -> Iterable:
    """Mark a loop ``for t in astgrad.checkpointed(range(n)):`` for checkpointing.

    Inside a differentiated function the loop's state (the values its body
    reads) is kept once every ``every`` steps (by default the ceiling of
    the square root of the number of steps) instead of what each step's
    reverse sweep reads; the reverse sweep runs each segment forward again
    from its kept state.  With ``snapshots=s`` instead, at most ``s`` states
    are kept at once (the loop's start among them) and the steps are run
    again on Griewank's binomial schedule, which recomputes the fewest
    steps for that memory (``binomial``).  Anywhere else it returns
    ``iterable`` unchanged.
    """
    _check_every(every, snapshots)
    return iterable


def _check_every(every, snapshots=None):
    if every is not None and (isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1):
        raise ValueError(f"astgrad.checkpointed: every={every!r}; pass a positive int (steps per segment) or None "
                         "(the square root of the number of steps)")
    if snapshots is None:
        return
    if isinstance(snapshots, bool) or not isinstance(snapshots, (int, np.integer)) or snapshots < 1:
        raise ValueError(f"astgrad.checkpointed: snapshots={snapshots!r}; pass a positive int (how many states of "
                         "the loop are kept at once, its start among them)")
    if every is not None:
        raise ValueError("astgrad.checkpointed: every= (segments of equal length) and snapshots= (the binomial "
                         "schedule) are two ways to checkpoint a loop; pass one of them")


def segments(iterable, every):
    """The loop's steps cut into runs of ``every`` (None: ``ceil(sqrt(steps))``), each a range or a list."""
    _check_every(every)
    steps = iterable if isinstance(iterable, range) else list(iterable)
    n = len(steps)
    size = int(every) if every is not None else math.isqrt(max(n - 1, 0)) + 1  # ceil(sqrt(n)), 1 for n <= 1
    return [steps[i:i + size] for i in range(0, n, size)]


class Binomial:
    """Griewank and Walther's binomial ("revolve") schedule for reversing n steps keeping at most s states.

    Iterated, it gives the forward sweep's runs: the state is kept before
    each, the loop's start first.  ``backward()`` then yields, for each
    step last first, ``(drops, runs, step)``: forget the ``drops`` newest
    states, take the newest left, run each of ``runs`` (a pair: its steps,
    and whether to keep the state after them), then rerun ``step`` keeping
    what its reverse reads and reverse it.

    The schedule is the recursion that reverses steps [a, b) with the state
    at a kept and c states allowed: run m steps, keep the state at a + m,
    reverse [a + m, b) with c - 1 states, forget it, reverse [a, a + m) with
    c.  With beta(c, t) = C(c + t, c), the most steps c states reverse when
    no step runs more than t times, l steps need the least t with
    beta(c, t) >= l, and the fewest runs, t l - beta(c + 1, t - 1), are
    reached by any m in [max(1, beta(c, t - 2), l - beta(c - 1, t)),
    min(beta(c, t - 1), l - beta(c - 1, t - 1))] (Griewank 1992; Griewank and
    Walther 2000); this takes the largest.  The parts need no more
    repetitions than the whole (the head at most t - 1), so t is carried
    down the recursion and only lowered.  Memory: the stack of pending
    parts, as deep as the recursion (about c + t), never the n steps.
    """

    def __init__(self, iterable, snapshots: int):
        _check_every(None, snapshots)
        self.steps = iterable if isinstance(iterable, range) else list(iterable)
        self.snapshots = int(snapshots)
        n = len(self.steps)
        self.chain = [0]  # where the forward sweep keeps the state: the first descent of the recursion
        a, c, t = 0, self.snapshots, _repetitions(n, self.snapshots)
        while n - a > 1 and c > 1:
            t = _lower(n - a, c, t)
            a, c = a + _split(n - a, c, t), c - 1
            self.chain.append(a)

    def __iter__(self):
        ends = self.chain[1:] + [len(self.steps)]
        return iter([self.steps[a:b] for a, b in zip(self.chain, ends)])

    def backward(self):
        n, steps, chain = len(self.steps), self.steps, self.chain
        if n == 0:
            return
        # the first descent was the forward sweep: from its last state, run on to the last step
        yield 0, [(steps[chain[-1]:n - 1], False)], steps[n - 1]
        # what the descent left, innermost last: the steps after its last state (with that state alone, as the
        # descent ended there with one state or one step), then at each level the state forgotten and the head
        pending: list = []
        for i in range(len(chain) - 1):
            pending += [("part", chain[i], chain[i + 1], self.snapshots - i, None), ("drop",)]
        if n - 1 > chain[-1]:
            pending.append(("part", chain[-1], n - 1, 1, None))
        drops = 0
        runs: list = []
        while pending:
            item = pending.pop()
            if item[0] == "drop":
                drops += 1
                continue
            _, a, b, c, t = item
            if b - a == 1:
                yield drops, runs, steps[a]
                drops, runs = 0, []
            elif c == 1:  # the state at a alone: run up to each step, last first
                for i in range(b - 1, a - 1, -1):
                    runs.append((steps[a:i], False))
                    yield drops, runs, steps[i]
                    drops, runs = 0, []
            else:
                t = _lower(b - a, c, _repetitions(b - a, c) if t is None else t)
                m = _split(b - a, c, t)
                runs.append((steps[a:a + m], True))
                pending += [("part", a, a + m, c, t - 1), ("drop",), ("part", a + m, b, c - 1, t)]


def _beta(c: int, t: int) -> int:
    return math.comb(c + t, c) if t >= 0 else 0


def _repetitions(length: int, c: int) -> int:
    """The least t with beta(c, t) >= length (doubling, then halving)."""
    high = 1
    while _beta(c, high) < length:
        high *= 2
    low = 0
    while low < high:
        mid = (low + high) // 2
        if _beta(c, mid) >= length:
            high = mid
        else:
            low = mid + 1
    return low


def _lower(length: int, c: int, t: int) -> int:
    """The least t for ``length`` steps, from a t known (by the theory) to be enough; raised if it were not."""
    while _beta(c, t) < length:
        t += 1
    while t > 0 and _beta(c, t - 1) >= length:
        t -= 1
    return t


def _split(length: int, c: int, t: int) -> int:
    """How many steps to run before keeping the next state: the largest optimal one."""
    return max(1, min(_beta(c, t - 1), length - _beta(c - 1, t - 1)))


def backward(schedule: Binomial):
    """``schedule.backward()``, called as a function of astgrad's own: generated code calling a method of an
    object would run under the run-time net (net.py), which holds the arguments' arrays for nothing here."""
    return schedule.backward()


def binomial(iterable, every, snapshots):
    """The schedule of a loop marked ``checkpointed(iterable, snapshots=s)`` (``every`` must be None)."""
    _check_every(every, snapshots)
    return Binomial(iterable, snapshots)


def restored(states: list, drops: int):
    """The newest kept state once the ``drops`` newest are forgotten, its dicts and lists copied: a binomial
    schedule takes a state back more than once, and the steps run from it may write a dict in place."""
    del states[len(states) - drops:]
    return kept(states[-1])


def fixed_state(values, where) -> None:
    """Refuse a random generator among ``values``: the reverse sweep would run it again and draw other numbers."""
    for value in values:
        if isinstance(value, GENERATORS):
            raise TypeError(f"astgrad: {where} holds a random generator ({type(value).__name__}); the reverse sweep "
                            "would run it again and draw other numbers. Draw the numbers outside the checkpointed "
                            "code and pass them in")


def kept(values):
    """``values`` (a tuple) as they are now: the dicts and lists in them copied, through nesting, sharing kept.

    Generated code writes a dict in place (``runtime.put``), so a kept reference would see later writes
    when the steps run again; arrays are never written in place there and are kept as they are.
    """
    return fresh_containers(values, {})


def fresh_containers(value, memo: dict):
    """``value`` with every list and dict in it (through tuples) copied, once each (``memo``, by id: a list
    held twice stays one list, a list that holds itself is copied once), arrays and other objects as they
    are.  A subclass keeps its class (``copy.copy``).  Also what a pullback's saved values go through, so
    that each backward run pops from lists of its own (api/pullback)."""
    if isinstance(value, list):
        found = memo.get(id(value))
        if found is None:
            found = memo[id(value)] = copy.copy(value)
            found[:] = [fresh_containers(item, memo) for item in value]
        return found
    if isinstance(value, dict):
        found = memo.get(id(value))
        if found is None:
            found = memo[id(value)] = copy.copy(value)
            found.update((k, fresh_containers(v, memo)) for k, v in value.items())
        return found
    if type(value) is tuple:  # the same tuple when nothing in it is copied: the state of arrays costs nothing
        items = [fresh_containers(item, memo) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else tuple(items)
    return value
