"""The front end: from a Python function to the normal form, checked and analysed.

Parsing and resolving names (parse, locate), refusing what cannot be
differentiated (syntax, aliasing, effects, callee_writes), normalising to
one operation per statement (normalize, expressions, structure, writes,
lists, containers, methods), and the analyses the sweeps read (analyse,
ranks, same_shapes, returns, naming).  Imports point down only: to
runtime/ (the helpers the normal form calls) and ir/.
"""
