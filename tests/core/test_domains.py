"""Domain membership edge cases."""

from __future__ import annotations

import numpy as np

import dpcompose as dp


def test_an_empty_two_dimensional_array_is_a_member_only_by_its_dtype() -> None:
    """Zero rows are one empty block: the dtype is still read (an object or string array is refused)."""
    rows = dp.VectorDomain(dp.VectorDomain(dp.AtomDomain(float), size=2))
    assert rows.member(np.empty((0, 2)))
    for dtype in (object, "U3", complex, bool):
        assert not rows.member(np.empty((0, 2), dtype=dtype))
