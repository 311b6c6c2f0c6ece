"""The optimisation passes over a generated function, by level (levels.py lists them).

Each pass takes the generated trees and returns them equivalent: fewer
saves, fewer temporaries, buffers reused (cleanup, unused, inplace, saves,
static_shapes, recurrences); split cuts a callee's one function into its pair.  They read the tags of ir/tagged.py, never
the user's code.
"""
