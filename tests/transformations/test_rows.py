"""Row transformations (issue 15): stability checked by brute force over every pair of small datasets.

For each transformation, every dataset over a small alphabet (up to 3 records, in every order) is run,
and for every pair the true input distance — add/remove (multiset symmetric difference), change-one as a
multiset (the fewest records to change) and change-one by position (Hamming) — is compared with the true
output distance: it must never exceed ``t.map(d_in)``, and the map's value at d_in = 1 must be reached
(tight) where the docstring says so. The user functions in these tests raise, answer out of contract and
answer correctly on different records, so the fallbacks are part of what is checked.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, namedtuple
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp

SYM, CHG = dp.SymmetricDistance(), dp.ChangeOneDistance()
NAN = math.nan


def _token(v: Any) -> str:
    """A record's identity for the metrics (repr: -0.0 and 0.0 are different records, NaN is one)."""
    return repr(v.tolist() if isinstance(v, np.generic) else v)


def _records(data: Any) -> list[Any]:
    return data.tolist() if isinstance(data, np.ndarray) else list(data)


def sym(a: Any, b: Any) -> int:
    ca, cb = Counter(map(_token, _records(a))), Counter(map(_token, _records(b)))
    return sum(((ca - cb) + (cb - ca)).values())


def change_multiset(a: Any, b: Any) -> int | None:
    if len(a) != len(b):
        return None
    return sym(a, b) // 2


def hamming(a: Any, b: Any) -> int | None:
    ra, rb = _records(a), _records(b)
    if len(ra) != len(rb):
        return None
    return sum(_token(x) != _token(y) for x, y in zip(ra, rb, strict=True))


def datasets(alphabet: Sequence[Any], max_len: int = 3) -> list[list[Any]]:
    return [list(xs) for n in range(max_len + 1) for xs in itertools.product(alphabet, repeat=n)]


def worst_case(
    t: Any,
    data: list[list[Any]],
    d_in: Callable[[Any, Any], int | None],
    d_out: Callable[[Any, Any], Any],
) -> dict[int, Any]:
    """Check d_out(t(x), t(x')) <= t.map(d_in(x, x')) for every pair; return the worst d_out per d_in."""
    outs = [t(x) for x in data]
    worst: dict[int, Any] = {}
    for i, j in itertools.combinations(range(len(data)), 2):
        d = d_in(data[i], data[j])
        if d is None:
            continue
        o = d_out(outs[i], outs[j])
        assert o <= t.map(d), (data[i], data[j], outs[i], outs[j], d, o, t.map(d))
        worst[d] = max(worst.get(d, 0), o)
    return worst


def absolute(a: int, b: int) -> int:
    return abs(a - b)


# --- make_subset_by -----------------------------------------------------------------------------------

FLOAT_NAN = dp.VectorDomain(dp.AtomDomain(float, nan=True))


def odd_predicate(x: float) -> Any:
    """Keeps 0.0, NaN and 2.5 (a truthy non-bool answer); raises on 1.0 (dropped)."""
    if x == 1.0:
        raise ValueError("one")
    if x == 2.5:
        return 1
    if math.isnan(x):
        return np.bool_(True)
    return x == 0.0


ALPHABET = [0.0, 1.0, 2.5, NAN]


def test_subset_by_keeps_only_true_and_never_raises() -> None:
    t = dp.t.make_subset_by(FLOAT_NAN, SYM, odd_predicate)
    out = t([0.0, 1.0, 2.5, NAN, 0.0, 3.0])
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert [_token(v) for v in out] == ["0.0", "2.5", "nan", "0.0"]
    assert t.output_domain == dp.VectorDomain(dp.AtomDomain(float, nan=True))
    assert t.output_metric == SYM


def test_subset_by_symmetric_is_1_stable_by_brute_force() -> None:
    t = dp.t.make_subset_by(FLOAT_NAN, SYM, odd_predicate)
    worst = worst_case(t, datasets(ALPHABET), sym, sym)
    assert all(worst[d] == d for d in (1, 2, 3))  # tight
    assert t.map(5) == 5


@pytest.mark.parametrize("distance", [change_multiset, hamming])
def test_subset_by_change_one_becomes_symmetric_2d_by_brute_force(distance: Any) -> None:
    t = dp.t.make_subset_by(FLOAT_NAN, CHG, odd_predicate)
    assert t.output_metric == SYM
    worst = worst_case(t, datasets(ALPHABET), distance, sym)
    assert worst[1] == 2 == t.map(1)  # [0.0] and [nan] are both kept: 2 apart, not 1
    assert all(worst[d] == 2 * d for d in (1, 2, 3))


def test_subset_by_generic_records_and_representations() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(tuple))
    t = dp.t.make_subset_by(rows, SYM, lambda r: r[0] > 1)
    assert t([(2,), (), (1,), ("x",), (5, 6)]) == [(2,), (5, 6)]  # () raises, "x" > 1 raises
    ints = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))
    keep_even = dp.t.make_subset_by(ints, SYM, lambda x: x % 2 == 0)
    seen: list[type] = []
    spy = dp.t.make_subset_by(ints, SYM, lambda x: seen.append(type(x)) or True)
    for data in ([1, 2, 4], np.array([1, 2, 4]), [np.int8(1), np.uint64(2), 4]):
        out = keep_even(data)
        assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.tolist() == [2, 4]
        spy(data)
    assert set(seen) == {int}  # the predicate sees Python ints, whatever the caller passed
    big = dp.VectorDomain(dp.AtomDomain(int))
    assert dp.t.make_subset_by(big, SYM, lambda x: x > 0)([2**70, -1, np.int64(3)]) == [2**70, 3]


# --- make_map_rows --------------------------------------------------------------------------------------

SMALL_INTS = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 3)))
MAP_ALPHABET = [0, 1, 2, 3]


def odd_function(x: int) -> Any:
    """Raises on 1, leaves the domain on 0 (-10), a bool on 3 (not an int member), in range on 2."""
    if x == 3:
        return True
    return 10 // (x - 1) - 8 if x != 0 else -10


def test_map_rows_replaces_failures_by_the_default() -> None:
    t = dp.t.make_map_rows(SMALL_INTS, SYM, odd_function, dp.AtomDomain(int, bounds=(0, 5)), default=4)
    out = t([0, 1, 2, 3])
    assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.tolist() == [4, 4, 2, 4]
    assert t.output_domain == dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 5)))


@pytest.mark.parametrize(("metric", "distance"), [(SYM, sym), (CHG, change_multiset), (CHG, hamming)])
def test_map_rows_is_1_stable_by_brute_force(metric: Any, distance: Any) -> None:
    t = dp.t.make_map_rows(SMALL_INTS, metric, odd_function, dp.AtomDomain(int, bounds=(0, 5)), default=4)
    assert t.output_metric == metric
    worst = worst_case(t, datasets(MAP_ALPHABET), distance, distance)
    assert worst[1] == 1 == t.map(1)
    assert t.map(3) == 3


def test_map_rows_output_type_and_values_do_not_depend_on_the_representation() -> None:
    t = dp.t.make_map_rows(
        dp.VectorDomain(dp.AtomDomain(float)), SYM, lambda x: x * 2, dp.AtomDomain(float), default=0.0
    )
    for data in ([1, 2.5], np.array([1.0, 2.5]), [np.float32(1.0), np.float64(2.5)], np.array([1, 2])):
        out = t(data)
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert t([1e308, 1.0]).tolist() == [0.0, 2.0]  # 2e308 is inf: outside AtomDomain(float)
    ints = dp.t.make_map_rows(
        dp.VectorDomain(dp.AtomDomain(str)), SYM, int, dp.AtomDomain(int), default=np.int64(-1)
    )
    out = ints(["7", "x", str(2**80)])
    assert out == [7, -1, 2**80] and all(type(v) is int for v in out)
    objects = dp.t.make_map_rows(
        dp.VectorDomain(dp.AtomDomain(int)), SYM, lambda x: (x, -x), dp.AtomDomain(tuple), default=()
    )
    assert objects([1, 2]) == [(1, -1), (2, -2)]
    label = ("big",)
    labels = dp.t.make_map_rows(
        dp.VectorDomain(dp.AtomDomain(int)),
        SYM,
        lambda x: ("big",) if x > 9 else "small",
        dp.CategoricalDomain(["small", label]),
        default="small",
    )
    out = labels([3, 10])
    assert out == ["small", label] and out[1] is label  # the domain's own category object is output


def test_map_rows_default_is_checked_when_built() -> None:
    with pytest.raises(dp.InvalidParameter, match=r"default=nan must be a member of output_domain"):
        dp.t.make_map_rows(SMALL_INTS, SYM, abs, dp.AtomDomain(float), default=NAN)
    with pytest.raises(dp.InvalidParameter, match="default=9"):
        dp.t.make_map_rows(SMALL_INTS, SYM, abs, dp.AtomDomain(int, bounds=(0, 5)), default=9)
    with pytest.raises(dp.InvalidParameter, match="default=True"):
        dp.t.make_map_rows(SMALL_INTS, SYM, abs, dp.AtomDomain(int), default=True)
    with pytest.raises(dp.InvalidParameter, match="output_domain="):
        dp.t.make_map_rows(SMALL_INTS, SYM, abs, float, default=0.0)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="function="):
        dp.t.make_map_rows(SMALL_INTS, SYM, 3, dp.AtomDomain(int), default=0)  # type: ignore[arg-type]
    with pytest.raises(dp.DomainMismatch, match="input_metric"):
        dp.t.make_map_rows(SMALL_INTS, dp.L1Distance(), abs, dp.AtomDomain(int), default=0)


class _Hostile:
    """A return value whose every dunder raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __float__(self) -> float:
        raise RuntimeError("float")

    def __len__(self) -> int:
        raise RuntimeError("len")


class _OddFloat(float):
    def __float__(self) -> float:
        return math.nan


def test_map_rows_survives_hostile_return_values() -> None:
    outputs: list[tuple[dp.Domain, Any]] = [
        (dp.AtomDomain(float), 0.0),
        (dp.VectorDomain(dp.AtomDomain(int)), []),
        (dp.CategoricalDomain(["a"]), "a"),
        (dp.AtomDomain(_Hostile), _Hostile()),
    ]
    for output, default in outputs:
        t = dp.t.make_map_rows(SMALL_INTS, SYM, lambda x: _Hostile(), output, default=default)
        assert len(t([0, 1])) == 2
    odd = dp.t.make_map_rows(SMALL_INTS, SYM, lambda x: _OddFloat(1.5), dp.AtomDomain(float), default=0.0)
    assert odd([1]).tolist() == [0.0]  # converted to a Python float it is NaN: the converted value is checked


# --- make_select_column ------------------------------------------------------------------------------------

Point = namedtuple("Point", ["x", "y"])
RECORDS = dp.VectorDomain(dp.AtomDomain(tuple))
COLUMN_ALPHABET: list[Any] = [(1, 2), (1,), (3, "x"), (0, 0)]


def test_select_column_from_tuples_mappings_and_namedtuples() -> None:
    by_position = dp.t.make_select_column(RECORDS, SYM, 1, dp.AtomDomain(int, bounds=(0, 9)), default=-0)
    assert by_position([(1, 2), (1,), (3, "x"), Point(5, 7), (0, 99)]).tolist() == [2, 0, 0, 7, 0]
    by_field = dp.t.make_select_column(RECORDS, SYM, "y", dp.AtomDomain(int), default=-1)
    assert by_field([Point(5, 7), (1, 2)]) == [7, -1]
    last = dp.t.make_select_column(RECORDS, SYM, -1, dp.AtomDomain(int), default=-1)
    assert last([(1, 2, 3), ()]) == [3, -1]
    people = dp.VectorDomain(dp.AtomDomain(dict))
    age = dp.t.make_select_column(people, CHG, "age", dp.AtomDomain(float, bounds=(0.0, 120.0)), default=0.0)
    assert age([{"age": 31}, {}, {"age": "31"}, {"age": math.nan}, {"age": 30.5}]).tolist() == [
        31.0,
        0.0,
        0.0,
        0.0,
        30.5,
    ]
    assert age.output_domain == dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 120.0)))
    assert age.output_metric == CHG and age.map(2) == 2


@pytest.mark.parametrize(("metric", "distance"), [(SYM, sym), (CHG, change_multiset), (CHG, hamming)])
def test_select_column_is_1_stable_by_brute_force(metric: Any, distance: Any) -> None:
    t = dp.t.make_select_column(RECORDS, metric, 1, dp.AtomDomain(int, bounds=(0, 5)), default=5)
    worst = worst_case(t, datasets(COLUMN_ALPHABET), distance, distance)
    assert worst[1] == 1 == t.map(1)


def test_select_column_refuses_bad_keys_and_defaults() -> None:
    for bad in ([0], {}, np.array([1]), True, np.bool_(False), NAN):
        with pytest.raises(dp.InvalidParameter, match="key="):
            dp.t.make_select_column(RECORDS, SYM, bad, dp.AtomDomain(int), default=0)  # type: ignore[arg-type]
    with pytest.raises(dp.InvalidParameter, match="default="):
        dp.t.make_select_column(RECORDS, SYM, 0, dp.AtomDomain(int), default=None)
    with pytest.raises(dp.InvalidParameter, match="column_domain="):
        dp.t.make_select_column(RECORDS, SYM, 0, int, default=0)  # type: ignore[arg-type]
    t = dp.t.make_select_column(RECORDS, SYM, np.int64(0), dp.AtomDomain(int), default=0)
    assert t([(4,)]) == [4]


# --- make_impute_constant / make_drop_null ----------------------------------------------------------------

NULL_ALPHABET = [0.0, 1.0, NAN]
BOUNDED_NAN = dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0), nan=True))


def test_impute_constant() -> None:
    t = dp.t.make_impute_constant(BOUNDED_NAN, SYM, 0.5)
    for data in ([NAN, 1.0, 0], np.array([NAN, 1.0, 0.0])):
        out = t(data)
        assert isinstance(out, np.ndarray) and out.tolist() == [0.5, 1.0, 0.0]
    assert t.output_domain == dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    assert t.output_domain.member(t([NAN] * 4))
    sized = dp.t.make_impute_constant(dp.VectorDomain(dp.AtomDomain(float, nan=True), size=2), CHG, 1)
    assert sized.output_domain == dp.VectorDomain(dp.AtomDomain(float), size=2)
    assert sized([NAN, 2.0]).tolist() == [1.0, 2.0]
    for bad in (2.0, NAN, math.inf, "0.5", Decimal("0.5"), 2**1100):
        with pytest.raises(dp.InvalidParameter, match="constant="):
            dp.t.make_impute_constant(BOUNDED_NAN, SYM, bad)
    with pytest.raises(dp.DomainMismatch, match="input_domain"):
        dp.t.make_impute_constant(dp.VectorDomain(dp.AtomDomain(int)), SYM, 0)


@pytest.mark.parametrize(("metric", "distance"), [(SYM, sym), (CHG, change_multiset), (CHG, hamming)])
def test_impute_constant_is_1_stable_by_brute_force(metric: Any, distance: Any) -> None:
    t = dp.t.make_impute_constant(BOUNDED_NAN, metric, 0.0)
    worst = worst_case(t, datasets(NULL_ALPHABET), distance, distance)
    assert worst[1] == 1 == t.map(1)


def test_drop_null() -> None:
    t = dp.t.make_drop_null(BOUNDED_NAN, SYM)
    assert t([NAN, 1.0, 0, NAN]).tolist() == [1.0, 0.0]
    assert t.output_domain == dp.VectorDomain(dp.AtomDomain(float, bounds=(0.0, 1.0)))
    assert t.output_domain.member(t(np.array([NAN, NAN])))
    with pytest.raises(dp.DomainMismatch, match="input_domain"):
        dp.t.make_drop_null(RECORDS, SYM)


@pytest.mark.parametrize(("metric", "distance"), [(SYM, sym), (CHG, change_multiset), (CHG, hamming)])
def test_drop_null_by_brute_force(metric: Any, distance: Any) -> None:
    t = dp.t.make_drop_null(BOUNDED_NAN, metric)
    assert t.output_metric == SYM
    worst = worst_case(t, datasets(NULL_ALPHABET), distance, sym)
    factor = 2 if metric == CHG else 1
    assert worst[1] == factor == t.map(1)  # [0.0] and [1.0] under change-one: 2 apart


# --- make_count_distinct -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "alphabet"),
    [
        (dp.VectorDomain(dp.AtomDomain(float, nan=True)), [0.0, -0.0, 1, NAN]),
        (dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 3))), [0, 1, 2, 3]),
        (dp.VectorDomain(dp.AtomDomain(str)), ["a", "b", "c"]),
        (RECORDS, [(1,), (1.0,), (True,), (NAN,), ()]),
        (dp.VectorDomain(dp.CategoricalDomain(["x", "y", "z"])), ["x", "y", "z"]),
    ],
    ids=["float", "int", "str", "tuple", "categorical"],
)
@pytest.mark.parametrize(("metric", "distance"), [(SYM, sym), (CHG, change_multiset), (CHG, hamming)])
def test_count_distinct_sensitivity_1_by_brute_force(
    domain: dp.Domain, alphabet: list[Any], metric: Any, distance: Any
) -> None:
    t = dp.t.make_count_distinct(domain, metric)
    worst = worst_case(t, datasets(alphabet), distance, absolute)
    assert worst[1] == 1 == t.map(1)  # change-one is 1, not 2: [a, a] -> [a, b] moves it by 1
    assert all(worst[d] <= d for d in worst)


def test_count_distinct_values() -> None:
    floats = dp.t.make_count_distinct(dp.VectorDomain(dp.AtomDomain(float, nan=True)), SYM)
    for data in ([1, 1.0, -0.0, 0.0, NAN, NAN], np.array([1.0, 1.0, -0.0, 0.0, NAN, NAN])):
        assert floats(data) == 3  # {1, 0, NaN}
    rows = dp.t.make_count_distinct(RECORDS, SYM)
    assert rows([(1,), (1.0,), (Fraction(1),), (np.int64(1),), (True,), (NAN,), (np.float32("nan"),)]) == 3
    # a type without a trusted equality is one value "other": (other,) and (other, 1)
    assert rows([(_Hostile(),), (_Hostile(), 1), (_Hostile(),)]) == 2
    deep: Any = ()
    for _ in range(100_000):
        deep = (deep,)
    assert rows([deep, (1,)]) == 2  # a nesting too deep to compare is "other", never a RecursionError
    big = dp.t.make_count_distinct(dp.VectorDomain(dp.AtomDomain(int)), CHG)
    assert big([2**80, 2**80, np.int64(5), 5]) == 2
    assert isinstance(big([]), int) and big([]) == 0


class _Hub:
    """Equal to every ``_Hub`` when either tag is 0, else only to its own tag (one hash for all): an
    equality that is not transitive, which the distinct count must not trust."""

    def __init__(self, tag: int) -> None:
        self.tag = tag

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hub) and (self.tag == other.tag or 0 in (self.tag, other.tag))

    def __hash__(self) -> int:
        return 0


def test_count_distinct_does_not_trust_a_records_own_equality() -> None:
    """A naive ``len(set(data))`` moves by 2 when the hub record is removed (sensitivity 1 broken);
    records of a type without a trusted equality are one class instead."""
    hub, rest = _Hub(0), [_Hub(1), _Hub(2), _Hub(3)]
    assert len({hub, *rest}) == 1 and len(set(rest)) == 3  # the naive count: 1, then 3
    t = dp.t.make_count_distinct(dp.VectorDomain(dp.AtomDomain(_Hub)), SYM)
    assert t([hub, *rest]) == t(rest) == 1


# --- never raise on in-domain data (more in tests/test_contract_no_raise.py) -------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_infinity=False), st.integers(-(2**53), 2**53)), max_size=20))
def test_numeric_paths_agree_with_lists_and_arrays(values: list[Any]) -> None:
    domain = dp.VectorDomain(dp.AtomDomain(float, nan=True))
    assert domain.member(values)
    array = np.asarray(values, dtype=np.float64)
    parts = [
        dp.t.make_subset_by(domain, SYM, lambda x: x > 0),
        dp.t.make_map_rows(domain, SYM, lambda x: x / 3, dp.AtomDomain(float, bounds=(-1.0, 1.0)), 0.0),
        dp.t.make_impute_constant(domain, SYM, 0.0),
        dp.t.make_drop_null(domain, CHG),
    ]
    for t in parts:
        a, b = t(values), t(array)
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype == np.float64
        assert [_token(v) for v in a] == [_token(v) for v in b]
        assert t.output_domain.member(a)
    distinct = dp.t.make_count_distinct(domain, SYM)
    generic = dp.t.make_count_distinct(dp.VectorDomain(dp.AtomDomain(tuple)), SYM)
    assert distinct(values) == distinct(array) == generic([(v,) for v in values])


def test_chains_into_a_count_and_explains() -> None:
    raw = dp.VectorDomain(dp.AtomDomain(float, nan=True), size=100)
    pipeline = (
        dp.t.make_drop_null(raw, CHG)
        >> dp.t.make_subset_by(dp.VectorDomain(dp.AtomDomain(float)), SYM, lambda x: x > 0)
        >> dp.t.make_count(dp.VectorDomain(dp.AtomDomain(float)), SYM)
    )
    assert pipeline.map(1) == 2
    noisy = pipeline >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
    assert noisy.map(1) == 1
    text = str(dp.explain(noisy, 1))
    assert "drop_null" in text
    assert "subset_by(predicate=test_chains_into_a_count_and_explains.<locals>.<lambda>)" in text


@settings(max_examples=200, deadline=None)
@given(
    st.floats(),
    st.sampled_from(
        [
            dp.AtomDomain(float),
            dp.AtomDomain(float, nan=True),
            dp.AtomDomain(float, bounds=(-1.0, 1.0)),
            dp.AtomDomain(float, bounds=(0, Fraction(1, 3)), nan=True),
        ]
    ),
)
def test_map_rows_float_fast_path_agrees_with_membership(value: float, output: dp.AtomDomain) -> None:
    default = 0.0
    t = dp.t.make_map_rows(dp.VectorDomain(dp.AtomDomain(int)), SYM, lambda _: value, output, default)
    expected = value if output.member(value) else default
    assert _token(t([0])[0]) == _token(expected)
