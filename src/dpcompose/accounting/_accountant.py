"""An accountant for DP-SGD loops written outside the library, with Opacus' method names.

:class:`PLDAccountant` records the steps a training loop takes — noise multiplier σ, sampling rate q,
and how the batch was drawn — and answers ε(δ) from the certified privacy loss distribution of the
subsampled Gaussian pairs (:class:`~dpcompose.accounting.PrivacyLoss`). It imports nothing of torch or
Opacus; an object of it can stand where an Opacus accountant is read (``accountant.step(...)``,
``accountant.get_epsilon(delta)``, ``accountant.history``, ``len(accountant)``).

The sampler that runs must be the one accounted. Poisson sampling (each example kept independently with
probability q; Opacus' ``poisson_sampling=True`` data loader, ``dp.make_subsample(..., "poisson")``) is
accounted for one example added or removed. A batch of fixed size m = q·n drawn uniformly without
replacement at every step (``dp.make_subsample(..., "without_replacement")``) is accounted for one example
substituted. A shuffled pass over the data cut into consecutive batches (``torch`` ``DataLoader(shuffle=
True)``) is neither, and is refused.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from dpcompose._validation import (
    check_finite_nonnegative,
    check_finite_positive,
    check_positive_int,
    check_probability,
)
from dpcompose.accounting._calibrate import calibrate_loss
from dpcompose.accounting._exact import exact, float_down, float_up
from dpcompose.accounting._loss import PrivacyLoss
from dpcompose.errors import InvalidParameter, UnsupportedComposition

__all__ = ["MAX_STEPS", "SAMPLINGS", "SHUFFLE_REFUSED", "PLDAccountant"]

MAX_STEPS = 10**9
"""The most steps :meth:`PLDAccountant.get_noise_multiplier` calibrates for."""

SAMPLINGS = ("poisson", "without_replacement")
"""The samplings :meth:`PLDAccountant.step` accounts (the names of ``PrivacyLoss.subsampled`` and
``make_subsample``)."""

SHUFFLE_REFUSED = (
    "sampling='shuffle' is refused: a shuffled epoch cut into consecutive batches is not Poisson sampling, "
    "and the Poisson ε people report for it can be far below its true ε (Chua, Ghazi, Kamath, Kumar, "
    "Manurangsi, Sinha, Zhang 2024, 'How Private are DP-SGD Implementations?', ICML: shuffling's privacy "
    "lower bounds exceed the Poisson accounting at the same σ and q). No theorem used here accounts it. "
    "Draw batches by Poisson sampling (sampling='poisson', e.g. Opacus' poisson_sampling=True or "
    "dp.make_subsample(..., 'poisson')), or fixed-size batches drawn afresh at every step without "
    "replacement (sampling='without_replacement')"
)
"""The message of the :class:`~dpcompose.errors.UnsupportedComposition` that :class:`PLDAccountant` raises for
``sampling='shuffle'``: shuffled batches are refused, no theorem here accounts them."""


def _check_sampling(sampling: object) -> str:
    if isinstance(sampling, str) and sampling in ("shuffle", "shuffled", "shuffling"):
        raise UnsupportedComposition(SHUFFLE_REFUSED)
    if not isinstance(sampling, str) or sampling not in SAMPLINGS:
        raise InvalidParameter(
            f"sampling={sampling!r} must be 'poisson' (each example kept with probability sample_rate) or "
            "'without_replacement' (a fixed-size batch drawn afresh at each step)"
        )
    return sampling


def _step_pair(noise_multiplier: float, sample_rate: float, sampling: str) -> PrivacyLoss:
    """The dominating pair of one step: the clipped sum moves by at most C for one example added or removed
    (Poisson), by at most 2C for one substituted (without replacement); the noise is N(0, (σC)²)."""
    shift = 1 if sampling == "poisson" else 2
    return PrivacyLoss.subsampled(PrivacyLoss.gaussian(shift, noise_multiplier), sample_rate, sampling)


def _read_rate(sample_rate: object) -> float:
    """The rate as a double on the safe side: an exact value between doubles (a Fraction) is rounded up
    (a larger rate never lowers ε)."""
    value = exact(check_finite_nonnegative(sample_rate, "sample_rate"), "sample_rate")
    if value > 1:
        raise InvalidParameter(f"sample_rate={sample_rate!r} must lie in [0, 1]")
    return min(1.0, float_up(value))


def _read_step(noise_multiplier: object, sample_rate: object) -> tuple[float, float]:
    """σ rounded down and q rounded up to doubles: the accounted step is never less private than the one
    that ran."""
    sigma = float_down(exact(check_finite_positive(noise_multiplier, "noise_multiplier"), "noise_multiplier"))
    if sigma <= 0:  # (a positive number below the smallest double)
        raise InvalidParameter(f"noise_multiplier={noise_multiplier!r} must be a positive double")
    return sigma, _read_rate(sample_rate)


def _composed(groups: Mapping[tuple[float, float], int], sampling: str) -> PrivacyLoss:
    return PrivacyLoss.compose([_step_pair(s, q, sampling).times(n) for (s, q), n in groups.items()])


class PLDAccountant:
    """Certified accounting of Gaussian steps on subsampled batches, with Opacus' method names.

    Each :meth:`step` records one step of noise multiplier σ (noise N(0, (σC)²) added to a sum of
    per-example gradients clipped to L2 norm C) on a batch sampled at rate q; :meth:`get_epsilon` reads the
    composition's certified privacy loss distribution: never below the true ε of the steps recorded.

    As a drop-in for Opacus accountants (``opacus.accountants.RDPAccountant``, ``PRVAccountant``):

    * the same: ``step(*, noise_multiplier, sample_rate)``; ``get_epsilon(delta)`` (a float ε for that δ);
      ``history``, a list of ``(noise_multiplier, sample_rate, num_steps)`` with consecutive equal steps
      merged; ``len(accountant)`` (here the number of steps, see below); ``mechanism()``;
      ``state_dict()`` / ``load_state_dict(state)`` (keys ``history``, ``mechanism``; here also
      ``sampling``); ``get_noise_multiplier(*, target_epsilon, target_delta, sample_rate, epochs=None,
      steps=None)``, a method here, a module function in ``opacus.accountants.utils``.
    * different: ``step`` takes ``sampling=`` (Opacus has none and always accounts Poisson);
      ``get_epsilon`` takes no ``eps_error``/``delta_error``/``alphas`` (the reading is certified, not
      estimated); ``get_noise_multiplier`` takes no ``accountant=``/``epsilon_tolerance=`` (it returns the
      least float σ whose certified ε meets the target, or with ``rtol`` > 0 one within that relative
      tolerance of it); ``len()`` counts steps (Opacus' ``PRVAccountant`` counts history entries);
      there is no ``get_optimizer_hook_fn`` (that needs Opacus' optimizer: call ``step`` in the loop) and
      no ``get_privacy_spent``. It does not subclass Opacus' ``IAccountant``: to pass it to a
      ``PrivacyEngine`` set ``engine.accountant = PLDAccountant()`` after construction.

    Steps: any number (10⁶ is as fast as 10: equal steps are one counted part); up to 512 distinct
    (σ, q) pairs over the run (the PLD composition's limit). All steps of one accountant use one
    sampling (the two hold for different neighbouring relations: :meth:`PrivacyLoss.compose`).

    Source: pairs, Zhu–Dong–Wang 2022 Thm 11 (Poisson) and Prop. 30 (without replacement); composition,
    Zhu–Dong–Wang 2022 Thm 10; the Gaussian's PLD as :func:`~dpcompose.accounting.pld_subsampled_gaussian`
    cites.

    Examples:
        >>> acc = PLDAccountant()
        >>> for _ in range(1000):
        ...     acc.step(noise_multiplier=1.0, sample_rate=0.01)
        >>> acc.history
        [(1.0, 0.01, 1000)]
        >>> 1.82 < acc.get_epsilon(1e-5) < 1.85
        True
    """

    def __init__(self) -> None:
        self.history: list[tuple[float, float, int]] = []
        self.sampling: str | None = None

    @classmethod
    def mechanism(cls) -> str:
        """The accounting's name (Opacus' ``mechanism()``)."""
        return "pld"

    def step(self, *, noise_multiplier: float, sample_rate: float, sampling: str = "poisson") -> None:
        """Record one step of noise multiplier σ on a batch drawn at rate q.

        Args:
            noise_multiplier: σ, the noise's standard deviation over the clipping norm (> 0).
            sample_rate: q in [0, 1]: Poisson, each example's probability of being in the batch;
                without replacement, the batch size over the dataset size.
            sampling: ``"poisson"`` (default) or ``"without_replacement"``; ``"shuffle"`` is refused
                (see :data:`SHUFFLE_REFUSED`).

        Raises:
            InvalidParameter: σ is not positive and finite, q is not in [0, 1], or ``sampling`` is unknown.
            UnsupportedComposition: ``sampling="shuffle"``, or a sampling other than this accountant's
                earlier steps'. A refused step records nothing.
        """
        history = self.history
        floats = type(noise_multiplier) is float and type(sample_rate) is float
        if history and floats and sampling == self.sampling:
            last_sigma, last_q, n = history[-1]
            if noise_multiplier == last_sigma and sample_rate == last_q:  # the step just checked, again
                history[-1] = (last_sigma, last_q, n + 1)
                return
        sigma, q = _read_step(noise_multiplier, sample_rate)
        how = _check_sampling(sampling)
        if self.sampling is not None and how != self.sampling:
            raise UnsupportedComposition(
                f"sampling={sampling!r}: this accountant's earlier steps were {self.sampling!r}, and the two "
                "hold for different neighbouring relations (added/removed against substituted), so they "
                "do not compose; use one sampling for the whole run"
            )
        self.sampling = how
        if self.history and self.history[-1][:2] == (sigma, q):
            self.history[-1] = (sigma, q, self.history[-1][2] + 1)
        else:
            self.history.append((sigma, q, 1))

    def __len__(self) -> int:
        """The number of steps recorded."""
        return sum(n for _, _, n in self.history)

    def privacy_loss(self) -> PrivacyLoss:
        """The dominating pair of the steps recorded (equal (σ, q) steps counted together).

        Raises:
            InvalidParameter: no step was recorded.
        """
        if not self.history:
            raise InvalidParameter("the accountant has no steps yet: call step(...) first")
        groups: Counter[tuple[float, float]] = Counter()
        for s, q, n in self.history:
            groups[(s, q)] += n
        return _composed(groups, self.sampling or "poisson")

    def get_epsilon(self, delta: float) -> float:
        """The certified ε at ``delta`` of the steps so far, rounded up to a float (0.0 before any step).

        Raises:
            InvalidParameter: ``delta`` is not in [0, 1], or below what the PLD certifies.
        """
        dlt = check_probability(delta, "delta")
        if not self.history:
            return 0.0
        return float_up(self.privacy_loss().epsilon(dlt))

    def state_dict(self) -> dict[str, Any]:
        """The accountant's state: ``history``, ``mechanism`` and ``sampling``."""
        return {"history": list(self.history), "mechanism": self.mechanism(), "sampling": self.sampling}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Replace the state by ``state_dict`` (from :meth:`state_dict`), checked whole before any change.

        Raises:
            InvalidParameter: the state is not a mapping with ``history`` (triples of σ > 0, q in [0, 1] and a
                positive count) and ``mechanism`` ``"pld"``, or its ``sampling`` is unknown.
        """
        if not isinstance(state_dict, Mapping) or "history" not in state_dict:
            raise InvalidParameter(f"state_dict={state_dict!r} must be a mapping with 'history'")
        if state_dict.get("mechanism") != self.mechanism():
            raise InvalidParameter(
                f"state_dict mechanism={state_dict.get('mechanism')!r} must be {self.mechanism()!r}"
            )
        entries = state_dict["history"]
        if not isinstance(entries, (list, tuple)):
            raise InvalidParameter(f"state_dict history={entries!r} must be a list of (σ, q, steps)")
        history: list[tuple[float, float, int]] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, (list, tuple)) or len(entry) != 3:
                raise InvalidParameter(f"state_dict history[{i}]={entry!r} must be (σ, q, steps)")
            sigma, q = _read_step(entry[0], entry[1])
            history.append((sigma, q, check_positive_int(entry[2], f"history[{i}] steps")))
        sampling = state_dict.get("sampling")
        how = _check_sampling("poisson" if sampling is None else sampling)
        self.history, self.sampling = history, (how if history else None)

    def get_noise_multiplier(
        self,
        *,
        target_epsilon: float,
        target_delta: float,
        sample_rate: float,
        epochs: float | None = None,
        steps: int | None = None,
        sampling: str = "poisson",
        rtol: float = 0.0,
    ) -> float:
        """The least float σ whose run of ``steps`` steps at rate q is certified (ε, δ)-DP.

        Opacus' ``get_noise_multiplier`` with the certified PLD as its accountant: ``steps`` or ``epochs``
        (then ``steps = int(epochs / sample_rate)``, as Opacus counts), not both. The answer is found by
        :func:`~dpcompose.accounting.calibrate_loss` (the σ returned passes, the float below it fails),
        started
        from the central-limit estimate μ = q·√(T(e^{1/σ²} − 1)) of Bu–Dong–Long–Su 2020 (only where the
        search starts: every σ read is certified). Nothing is recorded in the accountant.

        Raises:
            InvalidParameter: a target, the rate or the step count is out of range (named; at most
                :data:`MAX_STEPS` steps); both or neither of ``steps`` and ``epochs`` are given; or no σ up
                to 1e10 meets the target.
            UnsupportedComposition: ``sampling="shuffle"``.
        """
        how = _check_sampling(sampling)
        q = _read_rate(sample_rate)
        if (steps is None) == (epochs is None):
            raise InvalidParameter(
                f"steps={steps!r}, epochs={epochs!r}: give exactly one (epochs are read as int(epochs / q) "
                "steps)"
            )
        if steps is None:
            ep = float(exact(check_finite_positive(epochs, "epochs"), "epochs"))
            if q == 0:
                raise InvalidParameter(
                    "sample_rate=0 with epochs: no number of steps makes an epoch; give steps"
                )
            steps = int(ep / q)
        t = check_positive_int(steps, "steps")
        if t > MAX_STEPS:
            raise InvalidParameter(
                f"steps={t!r} must be at most {MAX_STEPS} (epochs are read as int(epochs / q) steps)"
            )
        # (targets rounded down: the σ found meets a target at most the one asked for)
        eps = float_down(exact(check_finite_positive(target_epsilon, "target_epsilon"), "target_epsilon"))
        dlt = float_down(exact(check_probability(target_delta, "target_delta"), "target_delta"))
        if not 0 < dlt < 1:
            raise InvalidParameter(
                f"target_delta={target_delta!r} must be in (0, 1): Gaussian steps have δ > 0"
            )

        def make(sigma: float) -> PrivacyLoss:
            return _composed({(sigma, q): t}, how)

        start = _clt_start(eps, dlt, q, t) * (1 if how == "poisson" else 2)
        try:
            return calibrate_loss(make, target_epsilon, target_delta, start=start, rtol=rtol)
        except InvalidParameter as exc:
            raise InvalidParameter(
                f"{exc} [for target_epsilon={target_epsilon!r}, target_delta={target_delta!r}, "
                f"sample_rate={sample_rate!r}, steps={t!r}]"
            ) from None


def _rough_gaussian_mu(eps: float, delta: float) -> float:
    """The μ at which μ-GDP is (ε, δ)-DP, in floats (a starting point only: Balle–Wang 2018 Thm 8).

    Not the certified ``largest_gdp_mu_sq`` of the filters: the σ that :func:`calibrate_loss` returns
    depends on where its search starts (at the scale of a few ulps the certified PLD reading is not
    monotone in σ), so a different start would move the σ :meth:`PLDAccountant.get_noise_multiplier`
    returns; and this float search costs microseconds where the certified one costs milliseconds."""

    def phi(x: float) -> float:
        return 0.5 * math.erfc(-x / math.sqrt(2))

    def d(mu: float) -> float:
        return phi(mu / 2 - eps / mu) - math.exp(eps) * phi(-mu / 2 - eps / mu)

    lo, hi = 1e-6, 1.0
    while d(hi) < delta and hi < 1e6:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if d(mid) < delta else (lo, mid)
    return hi


def _clt_start(eps: float, delta: float, q: float, steps: int) -> float:
    """σ with q·√(T(e^{1/σ²} − 1)) = μ(ε, δ): where the search starts (Bu–Dong–Long–Su 2020, the CLT);
    1 where the floats cannot say."""
    try:
        mu = _rough_gaussian_mu(eps, delta)
        x = (mu / q) ** 2 / steps
        start = 1 / math.sqrt(math.log1p(x))
    except (ArithmeticError, ValueError):
        return 1.0
    return start if 0 < start < 1e10 else 1.0
