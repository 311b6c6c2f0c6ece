"""The back end: generated trees to source text, source to a function, and stages to show.

emit.py renders and compiles (registered in ``linecache`` so tracebacks and
pdb show the generated lines); namespace.py is the global namespace of a
generated module; stages.py renders the function after one pass for
``show(f, stage=...)``.
"""
