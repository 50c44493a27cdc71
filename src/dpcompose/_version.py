"""The version of this dpcompose release: the one place it is written.

``pyproject.toml`` reads it from here (``[tool.setuptools.dynamic]``), ``dpcompose.__version__``
re-exports it and ``to_json`` writes it into every file's header.
"""

from __future__ import annotations

__version__ = "0.1.0"
"""The version of this dpcompose release."""
