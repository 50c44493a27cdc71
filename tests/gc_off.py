"""The cyclic garbage collector switched off for a block (tests' helper)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_off() -> Iterator[None]:
    """Run the block with the cyclic collector off, restoring its state after (reference counting still
    frees everything acyclic)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
