"""The intermediate representation every stage shares (the lowest layer of transform/).

compat.py is the one module that touches gast and astor; nodes.py is the
normal form the front end produces and the sweeps read (one operation per
statement); tagged.py marks the statements of generated code the passes
after reversal look for (pushes, pops, kept shapes); trees.py builds and
rewrites generated trees; errors.py holds ``TransformError``.  Nothing here
imports another stage.
"""
