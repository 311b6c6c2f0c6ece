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


class Refusal:
    """Makes, when called, a new copy of a refusal met at transform time (type, message, location): what the
    stand-in generated code holds for a callee refused in a branch that may not run raises."""

    def __init__(self, error: TransformError):
        self.error = error

    def __call__(self) -> TransformError:
        e = self.error
        made = type(e).__new__(type(e))
        TransformError.__init__(made, e.reason, e.filename, e.lineno, e.col, e.source_line, e.hint)
        made.__dict__.update({k: v for k, v in e.__dict__.items() if k not in made.__dict__})
        return made
