"""Static types of serialization (issue 14) under mypy --strict."""

from __future__ import annotations

from typing import Any

from typing_extensions import assert_type

import dpcompose as dp


def test_serialize_types() -> None:
    count = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
    text = dp.to_json(count, drop_rng=False)
    assert_type(text, str)
    loaded = dp.from_json(text)
    assert_type(loaded, Any)
    assert_type(dp.register_function("typing.len", len), None)
    assert loaded.map(1) == count.map(1)
