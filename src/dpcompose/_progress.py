"""Progress for long runs: ``tqdm`` when it is installed (an optional extra), else plain lines.

Used by the verification command (``python -m dpcompose verify``) and by :func:`dpcompose.audit` with
``progress=True``. Progress goes to standard error, so a command's standard output stays machine-readable.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

__all__ = ["load_tqdm", "plain_progress", "progress"]

T = TypeVar("T")


def load_tqdm() -> Any:
    """``tqdm.tqdm`` if tqdm is installed, else ``None``."""
    try:
        return importlib.import_module("tqdm").tqdm
    except ImportError:
        return None


def progress(
    items: Iterable[T], total: int, label: str, *, enabled: bool = True, stream: TextIO | None = None
) -> Iterator[T]:
    """Yield ``items`` unchanged while reporting how many of ``total`` are done.

    With tqdm installed: a tqdm bar. Without it: about twenty lines ``k/total label (p%), t s``, the last
    at 100% (:func:`plain_progress`). ``enabled=False`` yields the items and prints nothing.

    Examples:
        >>> import io
        >>> list(progress(range(3), 3, "steps", enabled=False))
        [0, 1, 2]
        >>> s = io.StringIO()
        >>> list(plain_progress(range(4), 4, "steps", s))
        [0, 1, 2, 3]
        >>> s.getvalue().splitlines()[-1].startswith("  4/4 steps (100%)")
        True
    """
    err = sys.stderr if stream is None else stream
    if not enabled:
        yield from items
        return
    tqdm = load_tqdm()
    if tqdm is not None:
        yield from tqdm(items, total=total, desc=label, file=err)
        return
    yield from plain_progress(items, total, label, err)


def plain_progress(items: Iterable[T], total: int, label: str, stream: TextIO) -> Iterator[T]:
    """The dependency-free fallback of :func:`progress`: a line every 5% of ``total``."""
    step = max(1, total // 20)
    start = time.perf_counter()
    for k, item in enumerate(items, start=1):
        yield item
        if k % step == 0 or k == total:
            elapsed = time.perf_counter() - start
            percent = 100 * k // max(total, 1)
            print(f"  {k}/{total} {label} ({percent}%), {elapsed:.1f} s", file=stream, flush=True)
