"""Bounded sums, with sensitivity that accounts for floating-point rounding."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpcompose._validation import check_nonnegative_int
from dpcompose.accounting import exact, float_up
from dpcompose.core import (
    AbsoluteDistance,
    AtomDomain,
    ChangeOneDistance,
    Domain,
    Metric,
    Node,
    Transformation,
    VectorDomain,
)
from dpcompose.core._metrics import check_space
from dpcompose.core._recipe import recorded
from dpcompose.errors import DomainMismatch, InvalidParameter
from dpcompose.transformations._clamp import (
    INT64_MAX,
    INT64_MIN,
    check_dataset_metric,
    int64_array,
    numeric_vector_carrier,
)

__all__ = ["make_sum"]


@recorded
def make_sum(
    input_domain: Domain, input_metric: Metric, *, max_size: int | None = None
) -> Transformation[Any, Any, int, Fraction]:
    """The sum of bounded records, under ``AbsoluteDistance``.

    Sensitivity for records in [lo, hi]: add/remove of d records moves the sum by at most
    d·max(|lo|, |hi|); changing d records moves it by at most d·(hi − lo).

    Integers are summed exactly, vectorised in int64: the public bounds fix at construction how many
    records one ``np.sum`` may add without overflow (``⌊(2**63 − 1)/max(|lo|, |hi|)⌋``, in chunks of that
    size); when that is fewer than 2**16 each record is split into 32-bit halves summed separately (exact
    for any int64); bounds beyond int64 are summed as Python ints. Floats are summed exactly and rounded
    once (the correctly rounded exact sum, as :func:`math.fsum` gives, computed on the array without a
    Python list: :func:`exact_float_sum`), and the sensitivity grows by one ulp of the largest possible
    |sum| to cover the two roundings —
    so float sums need a known bound n on the number of records: the domain's ``size`` or ``max_size=``.
    The sum is then *saturated* to ``[-L, L]`` with ``L`` the least float ≥ n·max(|lo|, |hi|), the
    largest |sum| n records can have: a dataset with more than n records is summed and clamped, never
    refused, because a refusal would reveal its size (an exception is an output too). Clamping is
    1-Lipschitz and every rounding happens at magnitudes ≤ L, so the map is unchanged. A bound with
    n·max(|lo|, |hi|) beyond the float range is refused at construction.
    So the textbook noise scale Δ/ε after a float sum costs slightly more than ε (no grid of the noise can
    help: neighbours' rounded sums truly differ by up to Δ + ulp(L)); ``dp.m.scale_for(sum, ε)`` gives a
    scale that meets ε, the float below it not.
    Naive float summation can exceed the textbook sensitivity (Casacuberta et al. 2022, "Widespread
    underestimation of sensitivity in differentially private libraries").

    Args:
        input_domain: ``VectorDomain(AtomDomain(int|float, bounds=(lo, hi)))``, without NaN.
        input_metric: ``SymmetricDistance()`` or ``ChangeOneDistance()``.
        max_size: for floats without a domain ``size``: the most records a dataset may hold.

    Source: Dwork–Roth 2014 §3.3 (sensitivity of bounded sums); rounding slack per Casacuberta et al. 2022.

    Examples:
        >>> import dpcompose as dp
        >>> ints = dp.VectorDomain(dp.AtomDomain(int, bounds=(0, 10)))
        >>> s = dp.t.make_sum(ints, dp.SymmetricDistance())
        >>> s([1, 2, 3]), s.map(1)
        (6, Fraction(10, 1))
        >>> s1 = dp.t.make_sum(ints, dp.ChangeOneDistance())
        >>> s1.map(1)
        Fraction(10, 1)
    """
    check_dataset_metric(input_metric)
    check_space(input_domain, input_metric)
    carrier = numeric_vector_carrier(input_domain)
    assert isinstance(input_domain, VectorDomain)
    element = input_domain.element_domain
    assert isinstance(element, AtomDomain)
    if element.bounds is None:
        raise DomainMismatch(
            f"make_sum needs bounded records, but {input_domain!r} has no bounds: chain make_clamp first"
        )
    if element.nan:
        raise DomainMismatch(
            f"make_sum cannot sum NaN, but {input_domain!r} admits it: its sum would be NaN, at no bounded "
            "distance from a number"
        )
    lo, hi = exact(element.bounds[0], "lo"), exact(element.bounds[1], "hi")
    per_record = (hi - lo) if isinstance(input_metric, ChangeOneDistance) else max(abs(lo), abs(hi))
    slack = Fraction(0)
    limit: int | None = None
    if carrier is float:
        limit = size_bound(input_domain, max_size, "a float sum", "records")
        largest = float_up(limit * max(abs(lo), abs(hi)))
        if largest == math.inf:
            raise InvalidParameter(
                f"max_size={limit} records of at most {float(max(abs(lo), abs(hi))):g} in magnitude can sum "
                "beyond the float range: lower max_size or the bounds"
            )
        slack = Fraction(math.ulp(largest))

    if carrier is int:
        run = int_sum(int(max(abs(lo), abs(hi))), int(lo), int(hi))
    else:
        saturation = int(Fraction(largest) * SUM_SCALE)  # L·2**1127, an exact integer

        def run(data: Any) -> Any:
            return exact_float_sum(_float64_array(data), saturation)

    def stability(d_in: int) -> Fraction:
        return d_in * per_record + (slack if d_in > 0 else 0)

    params = [("bounds", repr(element.bounds))]
    if limit is not None:
        params.append(("max_size", str(limit)))
    return Transformation(
        input_domain,
        AtomDomain(carrier),
        input_metric,
        AbsoluteDistance(),
        run,
        stability,
        node=Node("sum", params=tuple(params), source="Dwork–Roth 2014 §3.3; Casacuberta et al. 2022"),
    )


def size_bound(input_domain: VectorDomain, max_size: object, what: str, noun: str) -> int:
    """The bound n on the number of records that a float sum's rounding slack needs: ``max_size`` if
    given, else the domain's ``size``; InvalidParameter naming both otherwise."""
    if max_size is not None:
        return check_nonnegative_int(max_size, "max_size")
    if input_domain.size is not None:
        return input_domain.size
    raise InvalidParameter(
        f"{what} needs a bound on the number of {noun} to bound its rounding error: give the VectorDomain "
        "a size or pass max_size="
    )


# --- exact integer sums ---------------------------------------------------------------------------------

SPLIT_CHUNK = 1 << 30  # halves: |x >> 32| ≤ 2**31 and x & (2**32 − 1) < 2**32, so 2**30 of each fit int64


def int_sum(bound: int, lo: int, hi: int) -> Any:
    """The exact summation for records in ``[lo, hi]`` with ``bound = max(|lo|, |hi|)``, chosen from the
    public bounds alone (never from the data).

    * bounds inside int64 and ``chunk = ⌊(2**63 − 1)/bound⌋ ≥ 2**16``: ``np.sum`` in int64 over chunks of
      ``chunk`` records (every partial sum of a chunk is at most ``chunk·bound < 2**63`` in magnitude, so
      nothing wraps), the chunk totals added as Python ints;
    * bounds inside int64 but larger: each record ``x = 2**32·(x >> 32) + (x & (2**32 − 1))``, both halves
      summed in int64 over chunks of 2**30 records (exact for every int64), recombined as Python ints;
    * bounds beyond int64: the records are Python ints already; summed by Python (exact, slow).
    """
    if not (lo >= INT64_MIN and hi <= INT64_MAX):

        def python_sum(data: Any) -> int:
            values = data.tolist() if isinstance(data, np.ndarray) else data
            return sum(int(x) for x in values)

        return python_sum
    chunk = INT64_MAX // max(bound, 1)
    if chunk >= 1 << 16:

        def chunked_sum(data: Any) -> int:
            arr = int64_array(data)
            if arr.size <= chunk:
                return int(np.sum(arr, dtype=np.int64))
            return sum(int(np.sum(arr[i : i + chunk], dtype=np.int64)) for i in range(0, arr.size, chunk))

        return chunked_sum

    def split_sum(data: Any) -> int:
        arr = int64_array(data)
        total = 0
        for i in range(0, arr.size, SPLIT_CHUNK):
            part = arr[i : i + SPLIT_CHUNK]
            high = int(np.sum(part >> 32, dtype=np.int64))
            low = int(np.sum(part & 0xFFFFFFFF, dtype=np.int64))
            total += (high << 32) + low
        return total

    return split_sum


# --- exact float sums -----------------------------------------------------------------------------------

#: Every float64 is an integer multiple of 2**-1074; with the frexp mantissa scaled to 53 bits the smallest
#: exponent is 2**(-1073 - 53), so sums are carried as integers in units of 2**-1127 (``SUM_SCALE``).
_SCALE_BITS = 1127
SUM_SCALE = 1 << _SCALE_BITS
_EXP_OFFSET = 1100  # frexp exponents of finite doubles lie in [-1073, 1024]: indices 27 … 2124
_BINS = 2200
FLOAT_CHUNK = 1 << 16  # per chunk, per bin: at most 2**16 halves of magnitude ≤ 2**27: exact in a double
FOLD_EVERY = 1 << 12  # int64 bin totals reach at most 2**12·2**16·2**27 = 2**55 before they are folded
WINDOW_BITS = 16  # a chunk's window: 2**16 values below 2**69 split at 2**32: sums of halves stay ≤ 2**53


def _float64_array(data: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    """A member of a float vector domain as one float64 array (exact: members are float64 values)."""
    if isinstance(data, np.ndarray):
        return data.astype(np.float64, copy=False)
    return np.asarray(data, dtype=np.float64)


def exact_float_total(values: np.ndarray[Any, np.dtype[np.float64]]) -> int:
    """The exact sum of finite float64 ``values`` as one Python integer in units of 2**-1127, vectorised.

    Each value is ``m·2**(e − 53)`` with ``m = frexp mantissa·2**53`` an integer below 2**53 in magnitude.
    The values are taken a chunk of 2**16 at a time, with ``E`` the chunk's largest frexp exponent:

    * **The window** (``e >= E − 16``, usually nearly every value): ``N = m·2**(e − E + 16)`` is an integer
      below 2**69 in magnitude (a power-of-two scaling: exact), split into ``h = ⌊N/2**32⌋`` and
      ``l = N − h·2**32`` (|h| ≤ 2**37, 0 ≤ l < 2**32, both exact doubles: ``l`` is an integer below 2**32,
      so the subtraction that gives it is exact). Every partial sum of at most 2**16 of them is an integer
      of magnitude at most 2**53 (``h``) or below 2**48 (``l``), so ``numpy.sum`` adds them exactly in any
      order; the chunk's window is ``(Σh·2**32 + Σl)·2**(E − 16 − 53)``, an integer number of units when
      ``E − 16 − 53 >= −1127`` (otherwise the whole chunk takes the next path).
    * **The tail** (``e < E − 16``): ``m`` is split into ``h = ⌊m/2**26⌋`` and ``l = m − h·2**26``
      (|h| ≤ 2**27, 0 ≤ l < 2**26, both exact doubles), and ``np.bincount`` adds the halves per exponent.
      Within a chunk every partial sum is an integer of magnitude below 2**43, so the double additions
      inside ``bincount`` are exact whatever their order; the per-exponent totals are carried in int64
      (folded into Python ints after every 2**12 chunks that added to them, so each stays below 2**55) and
      finally combined exactly.

    The values must be finite (every caller's domain says so): a NaN or ±inf makes the total unspecified.
    Memory: a few arrays of one chunk, whatever the input size.

    Source: exact summation by exponent buckets (error-free splitting as in Dekker 1971), with the
    dominant exponents aligned to one fixed-point unit first (the error-free extraction of Rump, Ogita,
    Oishi 2008, "Accurate floating-point summation part I", SIAM J. Sci. Comput. 31(1), Lemma 3.3, in
    integer form).

    Examples:
        >>> import numpy as np
        >>> from fractions import Fraction
        >>> t = exact_float_total(np.array([0.1, 0.2, -0.3]))
        >>> Fraction(t, 2**1127) == Fraction(0.1) + Fraction(0.2) - Fraction(0.3)
        True
        >>> t = exact_float_total(np.array([1e300, 1.0, 5e-324, -1e300]))  # window and tail
        >>> Fraction(t, 2**1127) == 1 + Fraction(5e-324)
        True
    """
    bins_high = np.zeros(_BINS, dtype=np.int64)
    bins_low = np.zeros(_BINS, dtype=np.int64)
    total = 0
    binned = 0  # chunks added to the bins since the last fold
    for start in range(0, values.size, FLOAT_CHUNK):
        mantissa, exponent = np.frexp(values[start : start + FLOAT_CHUNK])
        lowest = int(exponent.max()) - WINDOW_BITS  # the window's smallest exponent
        unit = lowest - 53 + _SCALE_BITS  # log2 of the window's unit, in units of 2**-1127
        if unit >= 0:
            inside = exponent >= lowest
            scaled = np.ldexp(mantissa, exponent - (lowest - 53))  # N, exactly, inside the window
            scaled[~inside] = 0.0
            high = np.floor(scaled * 2.0**-32)
            scaled -= high * 2.0**32  # now l, exact
            high_sum, low_sum = float(high.sum()), float(scaled.sum())
            if math.isfinite(high_sum) and math.isfinite(low_sum):  # else NaN or ±inf: all to the bins
                total += ((int(high_sum) << 32) + int(low_sum)) << unit
                if bool(inside.all()):
                    continue
                outside = ~inside
                mantissa, exponent = mantissa[outside], exponent[outside]
        mantissa *= 2.0**53
        high = np.floor(mantissa * 2.0**-26)
        mantissa -= high * 2.0**26  # now the low half, exact
        index = exponent.astype(np.intp)
        index += _EXP_OFFSET
        bins_high += np.bincount(index, weights=high, minlength=_BINS).astype(np.int64)
        bins_low += np.bincount(index, weights=mantissa, minlength=_BINS).astype(np.int64)
        binned += 1
        if binned == FOLD_EVERY:
            binned = 0
            total += fold_bins(bins_high, bins_low)
            bins_high[:] = 0
            bins_low[:] = 0
    total += fold_bins(bins_high, bins_low)
    return total


def exact_float_sum(values: np.ndarray[Any, np.dtype[np.float64]], saturation: int) -> float:
    """The exact sum of finite float64 ``values``, clamped to ``±saturation·2**-1127`` (``saturation`` is
    an integer in units of 2**-1127) and rounded once to the nearest double (ties to even): what
    ``math.fsum`` returns, without a Python list and without intermediate overflow.

    The exact total ``T`` (:func:`exact_float_total`) is clamped exactly, and ``T / 2**1127`` is Python's
    correctly rounded integer division.

    Source: correct rounding of an exact sum as in Shewchuk 1997 (the algorithm behind ``math.fsum``).

    Examples:
        >>> import math, numpy as np
        >>> xs = np.array([1e16, 1.0, -1e16, 0.1])
        >>> exact_float_sum(xs, 1 << 2200) == math.fsum(xs.tolist()) == 1.1
        True
    """
    total = exact_float_total(values)
    total = min(max(total, -saturation), saturation)
    return total / SUM_SCALE if total else 0.0


def fold_bins(bins_high: np.ndarray[Any, Any], bins_low: np.ndarray[Any, Any]) -> int:
    """Σ over exponents e of (high_e·2**26 + low_e)·2**(e − 53), in units of 2**-1127, exactly."""
    total = 0
    for i in np.flatnonzero(bins_high | bins_low).tolist():
        shift = i - _EXP_OFFSET - 53 + _SCALE_BITS  # ≥ -1073 - 53 + 1127 = 1
        total += ((int(bins_high[i]) << 26) + int(bins_low[i])) << shift
    return total
