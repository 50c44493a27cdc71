"""Combinators: composite measurements whose privacy maps apply the composition theorems."""

from __future__ import annotations

from dpcompose.combinators._compose import make_concurrent, make_sequential

__all__ = ["make_concurrent", "make_sequential"]
