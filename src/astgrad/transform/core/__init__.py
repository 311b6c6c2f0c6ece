"""The sweeps: the primal and adjoint of a normal-form function (reverse) and its tangents (forward).

reverse.py and forward.py walk the normal form once; inline.py and
folding.py put each rule's body in place, with what is known when the code
is generated folded away; fusion.py, scalar_seeds.py and remat.py are the
choices the reverse sweep makes per statement at the higher levels;
linearize.py cuts a generated jvp into the primal half ``linearize`` runs
once and the tangent half each ``jvp_fn`` call runs.
"""
