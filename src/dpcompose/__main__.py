"""Command line: ``python -m dpcompose tour``."""

from __future__ import annotations

import argparse
import sys

from dpcompose._figures import main as figures_main
from dpcompose._tour import run_tour
from dpcompose.analysis._account_cli import main as account_main
from dpcompose.analysis._verify_cli import main as verify_main


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m dpcompose``."""
    parser = argparse.ArgumentParser(prog="python -m dpcompose", description="dpcompose command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tour", help="an end-to-end walk through the library (seconds)")
    sub.add_parser(
        "verify",
        help="privacy verification experiments: 'verify lp --trials 10000 --delta 0.01 --seed 0'",
        add_help=False,
    )
    sub.add_parser(
        "account",
        help="ε for δ of a list of mechanisms: 'account --mech laplace:scale=10,count=1000 --delta 1e-6'",
        add_help=False,
    )
    sub.add_parser(
        "figures",
        help="regenerate a figure in docs/: 'figures adaptive' (needs the plot extra)",
        add_help=False,
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "figures":
        return figures_main(rest)
    if args.command == "tour":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return run_tour()
    if args.command == "verify":
        return verify_main(rest)
    if args.command == "account":
        return account_main(rest)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse exits first
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
