"""Command line: ``python -m dpcompose tour``."""

from __future__ import annotations

import argparse
import sys

from dpcompose._tour import run_tour


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m dpcompose``."""
    parser = argparse.ArgumentParser(prog="python -m dpcompose", description="dpcompose command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tour", help="an end-to-end walk through the library (seconds)")
    args = parser.parse_args(argv)
    if args.command == "tour":
        return run_tour()
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse exits first
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
