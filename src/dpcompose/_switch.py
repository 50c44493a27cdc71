"""A process-wide on/off switch for a group of speed devices (DESIGN.md §6: speed code has an off switch),
read from an environment variable at import and changeable for a block."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["OFF_VALUES", "SpeedSwitch"]

OFF_VALUES = frozenset({"0", "false", "off", "no"})
"""The environment values (any case, surrounding spaces ignored) that turn a switch off."""


class SpeedSwitch:
    """On unless the environment variable ``env`` holds one of :data:`OFF_VALUES`; with ``default=False``,
    off unless it holds another value (``1``, ``on``, ...).

    Examples:
        >>> switch = SpeedSwitch("DPCOMPOSE_EXAMPLE_SWITCH")
        >>> switch.on()
        True
        >>> with switch.turned(False):
        ...     switch.on()
        False
        >>> switch.on()
        True
        >>> SpeedSwitch("DPCOMPOSE_EXAMPLE_SWITCH", default=False).on()
        False
    """

    def __init__(self, env: str, default: bool = True) -> None:
        self.env = env
        self._on = os.environ.get(env, "1" if default else "0").strip().lower() not in OFF_VALUES

    def on(self) -> bool:
        """Whether the devices are on."""
        return self._on

    @contextlib.contextmanager
    def turned(self, on: bool) -> Iterator[None]:
        """The switch set to ``on`` for the block, then restored to the setting found (process-wide)."""
        before = self._on
        self._on = bool(on)
        try:
            yield
        finally:
            self._on = before

    def __repr__(self) -> str:
        return f"SpeedSwitch({self.env!r}, on={self._on})"
