"""What every transformation returns: a callable whose generated code is its ``.source``.

``GeneratedCallable`` is the one base of the callables ``grad``, ``jvp``, the
higher-order derivatives and the compositions return.  Each says what its
``.source`` is; the base shows that source in a notebook (highlighted HTML
or Markdown), and nothing while it cannot be known yet (code made at the
first call), so IPython falls back to the repr.
"""

from __future__ import annotations

from typing import Any, Callable


class GeneratedCallable:
    """A transformation of a user's function, called like it; ``.source`` is the generated code that runs."""

    __wrapped__: Callable  # the user's function, set by functools.update_wrapper
    _generated: Any  # the Generated code that runs (None while it is made per call)
    _shown: Any

    @property
    def source(self) -> str:
        raise NotImplementedError

    def _known_source(self) -> str | None:
        try:
            return self.source
        except AttributeError:  # made at the first call, for the functions its parameters hold
            return None

    def _repr_html_(self) -> str | None:
        """In a notebook: the generated source, highlighted."""
        source = self._known_source()
        if source is None:
            return None
        from ..views.display import source_html
        return source_html(source)

    def _repr_markdown_(self) -> str | None:
        source = self._known_source()
        if source is None:
            return None
        from ..views.display import source_markdown
        return source_markdown(source)
