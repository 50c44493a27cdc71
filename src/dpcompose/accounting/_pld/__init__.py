"""The PLD engine (privacy loss distributions with certified two-sided bounds), a private package.

Modules in import order, bottom first; each imports only modules above it in this list
(``accounting/_exact.py`` and ``accounting/_gaussian.py``, the scalar outward rounding and the Gaussian
closed form, sit below the package):

* ``floats``: the floating-point error model (γₙ, FFT error factors, subnormal pads).
* ``lattice``: the loss lattice h·Z, aligned lattices, the constructors' parameter checks.
* ``side``: one side of a PLD and its certified convolution (direct, FFT), truncation, trimming.
* ``buckets``: a mechanism's loss buckets to the two sides (connect-the-dots upper, lumped lower).
* ``longdouble``: the long-double DFT of the head of the spectrum.
* ``fourier``: long compositions in the frequency domain (MGFs, Chernoff window, Fourier power).
* ``concurrency``: the speed switch, once-computed attributes, threads, the process-wide cache of tilted
  composites.
* ``tilt``: tilted composites and the tilted lower side.
* ``recipe``: reading a long composition through tilted composites (``Recipe``).
* ``orders``: the two orders of an asymmetric pair read as one (screening twins, the two-thread read), on
  an ``Orders`` object (the orders and how to read them), not on the record.
* ``lazy``: ``Sides``, one order's two sides, each built on first use, with the memo of the float curves
  read off them (what the record holds in place of lazy and cache fields).
* ``reading``: how a PLD is read, its representation variant as a strategy object the record holds: one
  order from its sides (``SidesReading``), the Gaussian closed form (``GaussianReading``), a long
  composition through its tilted recipe (``TiltedReading``), an asymmetric pair of two orders
  (``PairReading``), a constructor's PLD with its content key and thin twin (``FromConstructor``).
* ``distribution``: the ``PLD`` record (its content and its reading) and the certified readings of its
  sides, compositions of groups of copies, the screening twin, the side builder ``build_pld``.
* ``composition``: ``compose_plds`` (equal PLDs, by content, composed as one group).
* ``rr``, ``laplace``, ``gaussian``, ``discrete_gaussian``: the constructors.
* ``subsample.cells``: mixture-loss cells to buckets, the two orders, the sampling checks.
* ``subsample.build``: lazy two-order builds and thin twins.
* ``subsample.continuous``, ``subsample.discrete``: the subsampled constructors.

Speed lives beside the accounting: threads (``concurrency.in_parallel``, used by ``orders`` and
``subsample.cells``), the process-wide cache of tilted composites (``concurrency.Composites``, ``HELD``),
screening twins (``orders.screened_orders``) and lazy two-order builds (``subsample.build``). One switch
turns them all off: the environment variable ``DPCOMPOSE_PLD_SPEEDUPS=0`` (read at import) or
``concurrency.speedups(False)`` for a block; the readings are the same either way, bit for bit
(``tests/accounting/pld/test_concurrency.py``).

Nothing outside this package imports one of its modules: ``accounting/__init__.py`` re-exports the binding
names, and ``accounting/_loss.py`` takes the package-internal names listed below.
"""

from __future__ import annotations

from dpcompose.accounting._pld.composition import compose_counted, compose_plds
from dpcompose.accounting._pld.discrete_gaussian import pld_discrete_gaussian

# package-internal names used by accounting/_loss.py
from dpcompose.accounting._pld.distribution import MIXED_SAMPLING, PLD, THIN_MIN_COUNT, reach_fits
from dpcompose.accounting._pld.gaussian import pld_gaussian
from dpcompose.accounting._pld.laplace import pld_discrete_laplace, pld_laplace

# the binding names (re-exported by dpcompose.accounting)
from dpcompose.accounting._pld.lattice import DEFAULT_STEP_BITS, DEFAULT_TAIL, check_aligned, constructor_grid
from dpcompose.accounting._pld.rr import pld_approx, pld_randomized_response
from dpcompose.accounting._pld.subsample.build import identity
from dpcompose.accounting._pld.subsample.cells import check_sampling
from dpcompose.accounting._pld.subsample.continuous import (
    pld_subsampled_approx,
    pld_subsampled_gaussian,
    pld_subsampled_laplace,
    pld_subsampled_rr,
)
from dpcompose.accounting._pld.subsample.discrete import (
    pld_subsampled_discrete_gaussian,
    pld_subsampled_discrete_laplace,
)

__all__ = [
    "DEFAULT_STEP_BITS",
    "DEFAULT_TAIL",
    "MIXED_SAMPLING",
    "PLD",
    "THIN_MIN_COUNT",
    "check_aligned",
    "check_sampling",
    "compose_counted",
    "compose_plds",
    "constructor_grid",
    "identity",
    "pld_approx",
    "pld_discrete_gaussian",
    "pld_discrete_laplace",
    "pld_gaussian",
    "pld_laplace",
    "pld_randomized_response",
    "pld_subsampled_approx",
    "pld_subsampled_discrete_gaussian",
    "pld_subsampled_discrete_laplace",
    "pld_subsampled_gaussian",
    "pld_subsampled_laplace",
    "pld_subsampled_rr",
    "reach_fits",
]

INTERNAL = [
    "MIXED_SAMPLING",
    "THIN_MIN_COUNT",
    "check_aligned",
    "check_sampling",
    "compose_counted",
    "constructor_grid",
    "identity",
    "pld_subsampled_approx",
    "pld_subsampled_rr",
    "reach_fits",
]

"""The package-internal names (not part of the API) that modules of dpcompose.accounting use."""
