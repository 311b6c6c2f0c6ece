"""The transformations: the public functions that differentiate (or batch) a user's function.

gradient.py holds ``grad``, ``value_and_grad``, ``vjp`` and ``show`` with the
cache of generated code; pullback.py the public ``vjp`` (its primals form:
the pullback at a point), linearize.py ``linearize``; forward.py ``jvp``; higher.py the derivatives of
generated code (``hessian``, ``grad(grad(f))``); compose.py ``jacobian``,
``hvp`` and the other compositions; inside.py a gradient called inside a
function being differentiated, vmapped.py a vmapped function called there
(batched.py is ``vmap`` itself).  callables.py resolves what was given (a
function, a bound method, a partial) and ``wrt``; arguments.py refuses
argument types numpy gives other meanings; what comes back is shaped by
values/returned.py.  ``astgrad/__init__.py`` re-exports the public names.
"""
