"""TransformError: what went wrong, where, and what to write instead."""

from __future__ import annotations


class TransformError(Exception):
    """A function cannot be differentiated by source transformation.

    The message names the file, line and column, shows the source line with
    a caret under the offending construct and suggests a rewrite.
    """

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0,
                 col: int = 0, source_line: str = "", hint: str = ""):
        self.reason = message
        self.filename = filename
        self.lineno = line
        self.col = col
        self.source_line = source_line
        self.hint = hint
        text = f"{filename}:{line}:{col + 1}: {message}"
        if source_line:
            stripped = source_line.rstrip()
            text += f"\n    {stripped}\n    {' ' * col}^"
        if hint:
            text += f"\n{hint}"
        super().__init__(text)


class UnsupportedSyntaxError(TransformError):
    """The function uses a construct the transformer does not handle."""


class NoRuleTransformError(TransformError):
    """The function calls, on a differentiable value, something without a rule."""
