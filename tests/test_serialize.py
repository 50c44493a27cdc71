"""dp.to_json / dp.from_json (issue 14): every public constructor round-trips, and bad files are refused.

The round-trip fixture walks the public ``__all__`` lists (``dp``, ``dp.t``, ``dp.m``, ``dp.combinators``)
and builds each constructor with the valid base arguments of the bad-input registry
(tests/test_bad_inputs.py), so a new constructor is covered as soon as it is registered there, and a
constructor that builds a library object but cannot be stored fails here. What is not a constructor call
(exceptions, ledgers, live queryables, helpers returning numbers) is listed in ``NOT_STORED`` with the
reason.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import pickle
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpcompose as dp
import test_bad_inputs as registry

#: User functions the registry's base arguments use: registered by name, as a user would.
for _name, _fn in (
    ("tests.test_bad_inputs.abs", abs),
    ("builtins.round", round),
    ("tests.test_bad_inputs.score_and_value", registry.score_and_value),
):
    dp.register_function(_name, _fn)

NOT_STORED = {
    "MemoryLedger": "a ledger is state (where spending is recorded), not a constructor call",
    "SQLiteLedger": "a ledger is state (where spending is recorded), not a constructor call",
    "wrap_queryable": "returns a live queryable (state)",
    "partition_threshold": "returns an int (a helper, not a constructor)",
    "marginal_tables": "returns a dict of arrays (a post-processing helper, not a constructor)",
    "tree_running_counts": "returns an array (a post-processing helper, not a constructor)",
    "scale_for": "returns a float (a planning helper, not a constructor)",
    "make_user_measurement": "user functions: round-tripped below once registered",
    "make_user_transformation": "user functions: round-tripped below once registered",
    "Domain": "abstract base class",
    "Metric": "abstract base class",
    "Measure": "abstract base class",
    "Measurement": "built by constructors (refused when called directly outside dpcompose)",
    "Transformation": "built by constructors (refused when called directly outside dpcompose)",
    "Queryable": "live state (answers, budget spent)",
    "Context": "holds the data: its configuration round-trips in tests/tables/test_stored.py",
    "unit_of": "returns a PrivacyUnit, stored inside a Context (tests/tables/test_stored.py)",
    "Column": "a part of a FrameDomain: round-tripped inside the FrameDomain sample",
    "col": "returns a query expression, stored inside a table query (tests/tables/test_stored.py)",
    "RenyiCurve": "a privacy quantity holding a function (a map's output), not a constructor call",
    "PoissonRuns": "a parameter record: round-tripped inside make_private_selection_renyi",
    "TruncatedNegativeBinomialRuns": "a parameter record: round-tripped inside make_private_selection_renyi",
}

_PUBLIC = {"": dp, "t.": dp.t, "m.": dp.m, "combinators.": dp.combinators}


def _constructors() -> list[tuple[str, Any]]:
    out = []
    seen: set[int] = set()
    for prefix, module in _PUBLIC.items():
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            seen.add(id(obj))
            out.append((prefix + attr, obj))
    return out


def _case_for(obj: Any) -> registry.Case | None:
    for case in registry.CASES.values():
        if (case.func if case.covers is None else case.covers) is obj:
            return case
    return None


_STORABLE = (dp.Domain, dp.Metric, dp.Measure, dp.Transformation, dp.Measurement)
_D_INS: list[Any] = [
    0,
    1,
    3,
    Fraction(1, 3),
    2.5,
    (1, Fraction(1), Fraction(1)),
    (2, Fraction(3), Fraction(2)),
]


def _maps_agree(a: Any, b: Any) -> int:
    """The maps of ``a`` and ``b`` agree (value, or error type) at every d_in the input metric accepts."""
    checked = 0
    for d in _D_INS:
        try:
            a.input_metric.validate(d)
        except dp.DPError:
            continue
        try:
            expected: Any = a.map(d)
        except dp.DPError as exc:
            expected = type(exc)
        try:
            got: Any = b.map(d)
        except dp.DPError as exc:
            got = type(exc)
        if isinstance(expected, dp.RenyiCurve):
            assert isinstance(got, dp.RenyiCurve)
            expected, got = [[c(alpha) for alpha in (1.5, 2, 10)] for c in (expected, got)]
        assert got == expected, (d, expected, got)
        checked += 1
    return checked


@pytest.mark.parametrize(("name", "constructor"), _constructors(), ids=[n for n, _ in _constructors()])
def test_every_public_constructor_round_trips(name: str, constructor: Any) -> None:
    short = name.rsplit(".", 1)[-1]
    if short in NOT_STORED:
        return
    case = _case_for(constructor)
    if case is None:  # a class without parameters (the registry lists it in NOT_CALLED)
        params = inspect.signature(constructor).parameters.values()
        required = [p for p in params if p.default is inspect.Parameter.empty]
        assert not required, f"{name} has no case in tests/test_bad_inputs.py, so no sample to round-trip"
        obj = constructor()
    else:
        obj = case.call(case.base())
    if not isinstance(obj, _STORABLE):
        assert short in (
            "to_json",
            "from_json",
            "register_function",
            "explain",
            "split_budget",
            "privacy_curve",
            "plot_profile",
            "binary_search_param",
            "calibrate_noise",
            "audit",
            "clopper_pearson",
        ), f"{name} returned {type(obj).__name__}: add it to NOT_STORED"
        return
    text = dp.to_json(obj)
    back = dp.from_json(text)
    assert type(back) is type(obj)
    assert dp.to_json(back) == text  # stable
    assert repr(back) == repr(obj)
    if isinstance(obj, (dp.Transformation, dp.Measurement)):
        assert back.input_domain == obj.input_domain and back.input_metric == obj.input_metric
        assert _maps_agree(obj, back) > 0
        if isinstance(obj, dp.Transformation):
            assert back.output_domain == obj.output_domain and back.output_metric == obj.output_metric
        else:
            assert back.output_measure == obj.output_measure
    else:
        assert back == obj


def test_a_chain_round_trips_and_behaves_the_same() -> None:
    ints = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))
    clamp = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance(), (0, 10))
    total = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric)
    release = total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=2.0)
    seq = dp.make_sequential(release, release, output_measure=dp.ApproxDP(), delta=1e-6)
    back = dp.from_json(dp.to_json(seq))
    assert back.map(1) == seq.map(1) and repr(back) == repr(seq)
    loaded_total = dp.from_json(dp.to_json(total))
    assert loaded_total([3, 20, -4, 5]) == total([3, 20, -4, 5]) == 18
    assert ints.member([1, 2])


def test_user_functions_are_stored_by_registered_name_only() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(int))

    def is_adult(age: int) -> bool:
        return age >= 18

    adults = dp.t.make_subset_by(rows, dp.SymmetricDistance(), is_adult)
    with pytest.raises(dp.SerializationError, match="register_function"):
        dp.to_json(adults)
    dp.register_function("tests.is_adult", is_adult)
    text = dp.to_json(adults)
    assert json.loads(text)["root"]["args"][2] == {"function": "tests.is_adult"}
    assert dp.from_json(text)([10, 20, 30]) == adults([10, 20, 30])
    with pytest.raises(dp.InvalidParameter, match="already"):
        dp.register_function("tests.is_adult", abs)  # the name is taken by another function
    unknown = text.replace("tests.is_adult", "tests.not_registered")
    with pytest.raises(dp.SerializationError, match="not_registered"):
        dp.from_json(unknown)


def test_rng_and_live_state_are_refused() -> None:
    ints = dp.AtomDomain(int)
    seeded = dp.m.make_laplace(ints, dp.AbsoluteDistance(), 1.0, rng=np.random.default_rng(0))
    with pytest.raises(dp.SerializationError, match="rng"):
        dp.to_json(seeded)
    loaded = dp.from_json(dp.to_json(seeded, drop_rng=True))
    assert "rng" not in dp.to_json(loaded) or json.loads(dp.to_json(loaded))["root"]["kwargs"]["rng"] is None
    data = dp.VectorDomain(dp.AtomDomain(int))
    ledger = dp.combinators.MemoryLedger()
    f = dp.make_privacy_filter(data, dp.SymmetricDistance(), dp.PureDP(), 1, 1.0, ledger=ledger)
    with pytest.raises(dp.SerializationError, match="ledger"):
        dp.to_json(f)
    with pytest.raises(dp.SerializationError):
        dp.to_json(f([1, 2]))  # a queryable


def test_pickle_stores_the_json_recipe_not_code() -> None:
    """A transformation or measurement pickles as ``from_json(to_json(obj))`` (registered by _serialize)."""
    clamp = dp.t.make_clamp(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance(), (0, 10))
    total = clamp >> dp.t.make_sum(clamp.output_domain, clamp.output_metric)
    release = total >> dp.m.make_laplace(total.output_domain, total.output_metric, scale=2.0)
    for obj in (clamp, total, release):
        payload = pickle.dumps(obj)
        assert dp.to_json(obj).encode() in payload
        back = pickle.loads(payload)
        assert type(back) is type(obj) and repr(back) == repr(obj) and back.map(1) == obj.map(1)
        assert dp.to_json(back) == dp.to_json(obj)
    user: dp.Measurement[Any, Any, Any, Any] = dp.make_user_measurement(
        dp.AtomDomain(int), dp.AbsoluteDistance(), dp.PureDP(), lambda x: x, lambda d: d, trusted=True
    )
    with pytest.raises(dp.SerializationError, match="register_function"):
        pickle.dumps(user)  # an unregistered function is refused, not pickled as code


def test_the_core_never_imports_serialize() -> None:
    """Pickling is registered from above: no module of dpcompose.core imports dpcompose._serialize."""
    core = Path(dp.core.__file__).parent
    for path in sorted(core.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("dpcompose._serialize") for n in names), f"{path.name}:{node.lineno}"


def test_files_from_a_future_version_or_tampered_are_refused() -> None:
    text = dp.to_json(dp.AtomDomain(int))
    doc = json.loads(text)
    for bad_version in ("2.0", "99.1", "x", 1, None):
        with pytest.raises(dp.SerializationError, match="version"):
            dp.from_json(json.dumps({**doc, "dpcompose": bad_version}))
    assert dp.from_json(json.dumps({**doc, "dpcompose": "1.7"})) == dp.AtomDomain(int)  # a newer minor
    evil = {**doc, "root": {"call": "os.system", "args": ["echo hi"], "kwargs": {}}}
    with pytest.raises(dp.SerializationError, match="os.system"):
        dp.from_json(json.dumps(evil))
    for broken in ("", "{", "[]", "null", '{"dpcompose": "1.0"}', b"\xff\xfe"):
        with pytest.raises(dp.SerializationError):
            dp.from_json(broken)


def _mutations(doc: Any) -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
        st.just({"float": "nan"}),
        st.just({"fraction": "1/0"}),
        st.just({"type": "object"}),
        st.just({"call": "dpcompose.core.AtomDomain", "args": [], "kwargs": {"carrier": "int"}}),
    )

    def replace(value: Any, path: list[int], leaf: Any) -> Any:
        if not path:
            return leaf
        if isinstance(value, dict) and value:
            key = sorted(value)[path[0] % len(value)]
            return {**value, key: replace(value[key], path[1:], leaf)}
        if isinstance(value, list) and value:
            i = path[0] % len(value)
            return [*value[:i], replace(value[i], path[1:], leaf), *value[i + 1 :]]
        return leaf

    return st.builds(replace, st.just(doc), st.lists(st.integers(0, 50), max_size=8), leaves)


_SAMPLE = json.loads(
    dp.to_json(
        dp.make_sequential(
            dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance())
            >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=Fraction(3, 2)),
            output_measure=dp.ApproxDP(),
            delta=1e-7,
        )
    )
)


@settings(max_examples=60, deadline=None)
@given(_mutations(_SAMPLE))
def test_tampered_files_raise_only_dp_errors(doc: Any) -> None:
    """Any change to a valid file either loads (it is still a valid file) or raises a DPError."""
    with contextlib.suppress(dp.DPError):
        dp.from_json(json.dumps(doc))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_mutations(_SAMPLE))
def test_tampered_files_raise_only_dp_errors_thorough(doc: Any) -> None:
    """test_tampered_files_raise_only_dp_errors with its full 300 examples."""
    test_tampered_files_raise_only_dp_errors.hypothesis.inner_test(doc)


# --- issue 32 item 4: a file cannot assert trust ------------------------------------------------------

_RELEASED: list[Any] = []


def _identity(x: Any) -> Any:
    _RELEASED.append(x)
    return x


def _as_fraction(d: Any) -> Fraction:
    return Fraction(d)


def _size(rows: list[Any]) -> int:
    return len(rows)


dp.register_function("tests.identity", _identity)
dp.register_function("tests.as_fraction", _as_fraction)
dp.register_function("tests.size", _size)


def _user_measurement_call(name: str, domain: Any, metric: Any) -> dict[str, Any]:
    """A stored make_user_measurement wiring the registered identity in as the 'mechanism'."""
    return {
        "call": "dpcompose.core.make_user_measurement",
        "args": [
            domain,
            metric,
            {"call": "dpcompose.core.PureDP", "args": [], "kwargs": {}},
            {"function": "tests.identity"},
            {"function": "tests.as_fraction"},
        ],
        "kwargs": {"trusted": True, "interactive": False, "name": name},
    }


def _tampered_laplace() -> str:
    """The reproducer: an honest Laplace file whose root is swapped for a user measurement that
    releases the raw datum under the name 'laplace(scale=1.0)'."""
    honest = json.loads(dp.to_json(dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=1.0)))
    domain, metric = honest["root"]["args"][:2]
    honest["root"] = _user_measurement_call("laplace(scale=1.0)", domain, metric)
    return json.dumps(honest)


def test_a_file_cannot_assert_trust_in_a_user_measurement() -> None:
    text = _tampered_laplace()
    _RELEASED.clear()
    with pytest.raises(dp.UnverifiedPartError) as refused:
        dp.from_json(text)
    message = str(refused.value)
    for part in (
        "root.call",
        "'laplace(scale=1.0)'",
        "make_user_measurement",
        "'tests.identity'",
        "'tests.as_fraction'",
        "allow_unverified=True",
    ):
        assert part in message, part
    assert isinstance(refused.value, dp.SerializationError)
    # the loader's own act: built, and labelled as what it is
    loaded = dp.from_json(text, allow_unverified=True)
    assert repr(loaded).startswith("Measurement(laplace(scale=1.0) [UNVERIFIED]")
    assert _RELEASED == []  # nothing ran while loading
    assert loaded(42) == 42 and _RELEASED == [42]  # what the file wired in: the raw datum


def test_user_parts_are_named_wherever_they_are_and_nothing_is_built() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(int))
    count = dp.t.make_count(rows, dp.SymmetricDistance())
    doc = json.loads(dp.to_json(count >> dp.m.make_laplace(count.output_domain, count.output_metric, 2.0)))
    laplace = doc["root"]["chain"][1]
    domain, metric = laplace["args"][:2]
    doc["root"]["chain"][1] = _user_measurement_call("noisy_count", domain, metric)
    with pytest.raises(dp.UnverifiedPartError, match=r"root\.chain\[1\]\.call: .*'noisy_count'"):
        dp.from_json(json.dumps(doc))
    # two parts inside a composition, after a part whose arguments its constructor would refuse: the
    # refusal names both and comes before anything is built (else the bad scale would be reported)
    bad = {**laplace, "args": [domain, metric, {"float": (-1.0).hex()}]}
    seq = {
        "call": "dpcompose.combinators.make_sequential",
        "args": [
            {"chain": [doc["root"]["chain"][0], bad]},
            doc["root"],
            {"chain": [doc["root"]["chain"][0], _user_measurement_call("second", domain, metric)]},
        ],
        "kwargs": {},
    }
    text = json.dumps({**doc, "root": seq})
    with pytest.raises(dp.UnverifiedPartError, match=r"2 user-written parts.*'noisy_count'.*'second'"):
        dp.from_json(text)
    with pytest.raises(dp.SerializationError, match="scale"):  # built: the bad part is reached
        dp.from_json(text, allow_unverified=True)


def test_user_parts_round_trip_when_the_loader_allows_them() -> None:
    rows = dp.VectorDomain(dp.AtomDomain(int))
    size = dp.make_user_transformation(
        rows,
        dp.AtomDomain(int),
        dp.SymmetricDistance(),
        dp.AbsoluteDistance(),
        _size,
        _as_fraction,
        trusted=True,
        name="size",
    )
    release = size >> dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
    text = dp.to_json(release)
    where = r"root\.chain\[0\]\.call: a user-written transformation 'size'"
    with pytest.raises(dp.UnverifiedPartError, match=where):
        dp.from_json(text)
    back = dp.from_json(text, allow_unverified=True)
    assert dp.to_json(back) == text and back.map(1) == release.map(1)
    assert dp.explain(back, 1).rows[1].label == "size [UNVERIFIED]"
    assert isinstance(back([5, 6, 7]), int)
    with pytest.raises(dp.InvalidParameter, match="allow_unverified"):
        dp.from_json(text, allow_unverified=1)  # type: ignore[arg-type]


def test_unpickling_does_not_assert_trust() -> None:
    """A Measurement pickles as its JSON recipe and unpickles through dp.from_json without
    allow_unverified: a pickled user-written part is refused when loaded; library parts are not."""
    user = dp.make_user_measurement(
        dp.AtomDomain(int),
        dp.AbsoluteDistance(),
        dp.PureDP(),
        _identity,
        _as_fraction,
        trusted=True,
        name="mine",
    )
    data = pickle.dumps(user)
    with pytest.raises(dp.UnverifiedPartError, match=r"'mine'.*not pickle"):
        pickle.loads(data)
    chained = dp.t.make_count(dp.VectorDomain(dp.AtomDomain(int)), dp.SymmetricDistance()) >> user
    with pytest.raises(dp.UnverifiedPartError):
        pickle.loads(pickle.dumps(chained))
    library = dp.m.make_laplace(dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0)
    assert pickle.loads(pickle.dumps(library)).map(1) == Fraction(1, 2)
