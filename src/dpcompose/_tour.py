"""``python -m dpcompose tour``: an end-to-end walk through the library in a few seconds."""

from __future__ import annotations

import csv
from fractions import Fraction
from importlib import resources
from typing import Any

import dpcompose as dp
from dpcompose.accounting import format_up


def load_people() -> dict[str, list[Any]]:
    """The synthetic tour dataset shipped with the package (see scripts/make_tour_data.py)."""
    with resources.files("dpcompose").joinpath("data/people.csv").open() as f:
        rows = list(csv.DictReader(f))
    return {
        "age": [int(r["age"]) for r in rows],
        "income": [float(r["income"]) for r in rows],
        "region": [r["region"] for r in rows],
        "smoker": [r["smoker"] for r in rows],
    }


def _say(text: str = "") -> None:
    print(text)


def _tables_tour(people: dict[str, list[Any]]) -> None:
    """Section 6: the same data as a table (needs the optional polars extra)."""
    try:
        import polars as pl  # optional dependency: the tables engine (pip install "dpcompose[polars]")
    except ImportError:
        _say('6. Tables: install the polars extra (pip install "dpcompose[polars]") to see dp.Context here.')
        return
    frame = pl.DataFrame({"age": people["age"], "region": people["region"]})
    schema = dp.FrameDomain({"age": dp.Column(int, bounds=(0, 100)), "region": dp.Column(str)})
    ctx = dp.Context(frame, schema, privacy_loss=1.0, measure=dp.PureDP(), split_evenly_over=2)
    query = (
        ctx.query()
        .filter(pl.col("age") >= 18)
        .group_by("region", keys=["north", "south", "east", "west", "centre"])
        .agg(pl.len(), pl.col("age").mean())  # Polars expressions, noised: dp.tables.count(), mean("age")
    )
    _say("6. Tables: a dp.Context over a Polars frame, half of ε = 1 per query, one person per row:")
    _say("   ctx.query().filter(pl.col('age') >= 18).group_by('region', keys=[...])")
    _say("      .agg(pl.len(), pl.col('age').mean())   (Polars expressions; every aggregate is noised)")
    for line in str(query.summarize()).splitlines():
        _say("   " + line)
    result = query.release()
    counts = zip(result.get_column("region").to_list(), result.get_column("count").to_list(), strict=True)
    _say(f"   released counts: {dict(counts)}")
    _say(f"   budget left: ε = {ctx.remaining()['epsilon']}  (rounded down)")


def run_tour() -> int:
    """Run the tour; returns a process exit code."""
    people = load_people()
    ages = people["age"]
    _say("dpcompose tour — differential privacy you can check before you run it")
    _say("=" * 72)
    _say(f"Dataset: {len(ages)} synthetic people (src/dpcompose/data/people.csv; invented, no real person).")
    _say("One person may be added or removed: SymmetricDistance, d_in = 1.")
    _say()

    ages_domain = dp.VectorDomain(dp.AtomDomain(int))
    sym = dp.SymmetricDistance()

    # 1. A DP count.
    count = dp.t.make_count(ages_domain, sym) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=10.0
    )
    _say("1. A DP count: make_count >> make_laplace(scale=10)")
    _say(f"   static check, before touching data: count.map(1) = {count.map(1)}  (ε = 1/10, exact)")

    # 2. A DP mean: clamp, make the size public, make_mean, Laplace noise.
    clamp = dp.t.make_clamp(ages_domain, sym, (0, 100))
    resize = dp.t.make_resize(clamp.output_domain, clamp.output_metric, size=len(ages), constant=40)
    mean = (
        clamp
        >> resize
        >> dp.t.make_mean(resize.output_domain, resize.output_metric)
        >> dp.m.make_laplace(dp.AtomDomain(float), dp.AbsoluteDistance(), scale=1.0)
    )
    _say()
    _say(f"2. A DP mean: clamp to [0, 100] >> resize to the public size {len(ages)} >> make_mean")
    _say("   >> laplace(scale=1)")
    _say("   (one person added or removed changes at most one record after the resize: the mean moves")
    _say(f"   by at most 100/{len(ages)} = 0.1, plus a rounding slack)")
    _say(f"   static check: mean.map(1) ≤ {format_up(mean.map(1), 7)}  (rounded up from the exact Fraction)")
    _say(f"   fits a budget of ε = 0.11? mean.check(1, 0.11) = {mean.check(1, 0.11)}")
    _say()
    _say("   Where the cost comes from:")
    for line in str(dp.explain(mean, 1)).splitlines():
        _say("   " + line)

    # 3. Ten queries at 1/10 use up ε = 1.0 exactly.
    ten = dp.make_sequential(*[count] * 10)
    _say()
    _say("3. Exact budgets: ten counts at ε = 1/10 each")
    _say(f"   ten.map(1) = {ten.map(1)};  ten.check(1, 1.0) = {ten.check(1, 1.0)}  (no 1.0000000000000002)")

    # 4. Composites: two sparse-vector monitors interleaved, a parallel histogram, all checked statically.
    rows_domain = dp.VectorDomain(dp.AtomDomain(tuple))
    rows = list(zip(people["age"], people["region"], people["smoker"], strict=True))
    regions = ["north", "south", "east", "west", "centre"]
    by_region = dp.t.make_partition(rows_domain, sym, by=1, keys=regions)
    region_count = dp.t.make_count(rows_domain, sym) >> dp.m.make_laplace(
        dp.AtomDomain(int), dp.AbsoluteDistance(), scale=2.0
    )
    histogram = dp.make_parallel(by_region, [region_count] * len(regions))
    svt = dp.m.make_sparse_vector(rows_domain, sym, threshold=150.0, scale=8.0, max_positive=1)
    monitors = dp.make_concurrent(svt, svt)
    _say()
    _say("4. Composites, checked before running:")
    _say(f"   parallel histogram over 5 regions: map(1) = {histogram.map(1)} (max over parts, not the sum)")
    _say(f"   two sparse-vector monitors under make_concurrent: map(1) = {monitors.map(1)}")
    hundred = dp.make_sequential(*[count] * 100, output_measure=dp.ApproxDP(), delta=1e-6)
    eps100, _ = hundred.map(1)
    _say(f"   100 counts at ε = 0.1 as (ε, 1e-6)-DP, optimal: ε = {format_up(eps100, 7)} (basic 10)")

    # Now, and only now, touch the data.
    _say()
    _say("Running (the only step that touches the data):")
    true_count, true_mean = len(ages), sum(ages) / len(ages)
    noisy_count, noisy_mean = count(ages), mean(ages)
    _say(f"   {'statistic':<12} {'true':>10} {'DP release':>12}")
    _say(f"   {'count':<12} {true_count:>10} {noisy_count:>12}")
    _say(f"   {'mean age':<12} {true_mean:>10.2f} {noisy_mean:>12.2f}")
    for region, noisy in zip(regions, histogram(rows), strict=True):
        true = sum(1 for r in rows if r[1] == region)
        _say(f"   {'n ' + region:<12} {true:>10} {noisy:>12}")

    def region_count_where(region: str, column: int, value: object) -> dp.Transformation[Any, Any, Any, Any]:
        """Records of one region with ``record[column] == value``: make_subset_by >> make_count (1-stable)."""
        keep = dp.t.make_subset_by(rows_domain, sym, lambda r: r[1] == region and r[column] == value)
        return keep >> dp.t.make_count(keep.output_domain, keep.output_metric)

    q_a, q_b = monitors(rows)
    smokers: list[str] = []
    seniors: list[str] = []
    for reg in regions:  # the two monitors' queries interleave; a monitor halts after its positive answer
        for answers, queryable, column, value in ((smokers, q_a, 2, "yes"), (seniors, q_b, 0, 90)):
            if any(a.endswith("above") for a in answers):
                answers.append(f"{reg} (halted)")
                continue
            above = queryable(region_count_where(reg, column, value))
            answers.append(f"{reg} {'above' if above else 'below'}")
    _say("   monitor A, smokers per region above 150?  " + ", ".join(smokers))
    _say("   monitor B, aged 90 per region above 150?  " + ", ".join(seniors))
    _say()
    # 5. Verification: check a mechanism's privacy exactly, and simulate it from randomized response.
    rr3 = dp.analysis.randomized_response(Fraction(3))  # RR with e^ε = 3, as a finite interactive mechanism
    _say("5. Verification (Vadhan–Wang 2021): exact privacy loss of randomized response with e^ε = 3:")
    _say(f"   privacy_loss(RR, δ=0) = {format_up(dp.analysis.privacy_loss(rr3, 0), 7)}  (ln 3 = 1.0986123)")
    sim = dp.analysis.rr_simulator(rr3, Fraction(3))
    _say(f"   simulated exactly as a post-processing of RR_ε: {sim!r}")
    _say()
    spent, _ = dp.accounting.basic([count.map(1), mean.map(1), histogram.map(1), monitors.map(1)])
    _say(f"Total spent by everything released above (basic composition): ε ≤ {format_up(spent)}")
    _say()
    _tables_tour(people)
    _say()
    _say("Next: docs/index.md, then docs/recipes.md (count, sum, mean, histograms, quantiles),")
    _say("docs/algorithms.md (k-means, median of means, private selection, running counts, MWEM),")
    _say("docs/tables.md (dp.Context over Polars and Spark frames), then concepts, measurements,")
    _say("combinators, accounting, adaptive, verification and security (docs/<name>.md).")
    return 0
