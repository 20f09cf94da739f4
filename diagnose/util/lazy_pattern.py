"""Regular expressions compiled on first use, so importing a module costs nothing for the patterns a run never reads.

A module-level ``PATTERN = re.compile(...)`` is paid by every start-up (vdiag has ~150 of them, about 0.1 s);
``PATTERN = lazy(...)`` is paid only by a run that uses it. After the first call the pattern's methods are bound
on the instance, so a hot loop pays no more than with the compiled pattern itself.

>>> number = lazy(r"(\\d+) GiB")
>>> number.search("took 12 GiB").group(1)
'12'
>>> number.pattern
'(\\\\d+) GiB'
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """A stand-in for a compiled pattern (``re`` or ``regex``) that compiles itself when first asked anything."""

    def __init__(self, pattern: str | bytes, flags: int = 0, engine: Any = re) -> None:
        self._source = (pattern, flags, engine)
        self._compiled: Any = None

    def compiled(self) -> Any:
        """The real compiled pattern (compiling it now if no one has asked yet)."""
        if self._compiled is None:
            pattern, flags, engine = self._source
            self._compiled = engine.compile(pattern, flags)
        return self._compiled

    @property
    def pattern(self) -> str | bytes:
        """The source, without compiling (modules build other patterns from it at import)."""
        return self._source[0]

    def __getattr__(self, name: str) -> Any:
        # Only called for names not found on the instance: bind once, then lookups are plain attribute reads.
        if name.startswith("__") or name in ("_source", "_compiled"):
            raise AttributeError(name)
        value = getattr(self.compiled(), name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r})"


def lazy(pattern: str | bytes, flags: int = 0, engine: Any = re) -> LazyPattern:
    """``re.compile`` deferred to first use; pass ``engine=regex`` for the ``regex`` module."""
    return LazyPattern(pattern, flags, engine)
