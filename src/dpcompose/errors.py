"""The dpcompose exception hierarchy.

Every error the library raises on purpose is a :class:`DPError`. Two of them also inherit from the
built-in exception a Python user would expect, so existing ``except ValueError`` / ``except TypeError``
handlers keep working.

Examples:
    >>> import dpcompose as dp
    >>> issubclass(dp.InvalidParameter, ValueError)
    True
    >>> issubclass(dp.DomainMismatch, TypeError)
    True
    >>> issubclass(dp.ResourceLimit, dp.InvalidParameter)
    True
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "DPError",
    "DomainMismatch",
    "EngineUnavailable",
    "InvalidParameter",
    "ResourceLimit",
    "SequentialityError",
    "SerializationError",
    "UnsupportedComposition",
    "UnverifiedPartError",
]


class DPError(Exception):
    """Root of every error dpcompose raises deliberately."""


class InvalidParameter(DPError, ValueError):
    """A parameter is NaN, infinite, negative, out of range, or otherwise unusable.

    Raised before anything runs and before any budget is spent.
    """


class ResourceLimit(InvalidParameter):
    """A computation would need more memory (or time) than dpcompose allows it; refused before the large
    arrays are allocated, naming the parameter to change (``step_bits``, ``tail``, a count).

    An :class:`InvalidParameter`, so a composition policy that tries several theorems moves on to the
    others, as it does for any candidate that cannot certify a case.
    """


class DomainMismatch(DPError, TypeError):
    """Two pieces do not fit together (domain or metric), an operator is not offered for an operand (a
    table expression divided), or data lies outside its declared domain."""


class BudgetExceeded(DPError):
    """A query would exceed the budget it is allowed to spend; it ran nothing and spent nothing."""


class EngineUnavailable(DPError):
    """A table engine cannot run jobs: Spark cannot start here, or a Context's engine is down (a stopped
    Spark session, a Spark driver whose JVM is gone), found by a check of the engine's own state before a
    release is charged. Nothing ran and nothing was spent: start the engine again and query a Context
    built on data of the new session."""


class SequentialityError(DPError):
    """An interactive child was queried after a later sibling had been queried (sequential composition)."""


class UnsupportedComposition(DPError):
    """No published theorem covers the requested composition; dpcompose refuses rather than guesses."""


class SerializationError(DPError, ValueError):
    """An object cannot be written by ``dp.to_json`` (a user function that is not registered, a random
    generator, live state), or a file cannot be read by ``dp.from_json`` (malformed, tampered, from an
    incompatible future format, naming an unknown constructor or function)."""


class UnverifiedPartError(SerializationError):
    """A file would build a user-written part (``dp.make_user_measurement`` / ``dp.make_user_transformation``)
    and the loader has not said it trusts it: ``dp.from_json`` (and unpickling) refuse it before building
    anything. Trusting a user-written map is the loader's own act: ``dp.from_json(text,
    allow_unverified=True)`` after reviewing the parts the message names."""
