"""The one wrapping of a query's privacy-map failure for the paths that price a query before running it
(adaptive compositors, filters, odometers, pair budgets)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dpcompose.errors import DPError, InvalidParameter

__all__ = ["map_errors"]


@contextlib.contextmanager
def map_errors(label: str) -> Iterator[None]:
    """Lets a :class:`DPError` raised inside pass as it is; turns any other exception into
    :class:`InvalidParameter` naming the query ``label`` (a map that fails prices nothing: the query is
    refused before anything is run or spent)."""
    try:
        yield
    except DPError:
        raise
    except Exception as exc:
        raise InvalidParameter(
            f"query {label}: its privacy map raised {type(exc).__name__}: {exc}; nothing was run or spent"
        ) from exc
