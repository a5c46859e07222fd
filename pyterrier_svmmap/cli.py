"""The ``svmmap`` command: ``svmmap reproduce``, ``svmmap learn``, ``svmmap classify``.

Each sub-command lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this module only dispatches. Errors a user can fix end with exit status 2 and
one line on stderr (``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import List, Optional

#: sub-command → module providing add_arguments(parser) and run(args)
COMMANDS = {
    "reproduce": "pyterrier_svmmap.reproduce.command",
    "learn": "pyterrier_svmmap.commands.learn",
    "classify": "pyterrier_svmmap.commands.classify",
}


class UsageError(Exception):
    """An error caused by the user's input: reported as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svmmap", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args._run(args) or 0)
    except (UsageError, FileNotFoundError, IsADirectoryError, PermissionError, ValueError) as e:
        if args.debug:
            raise
        print(f"svmmap {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
