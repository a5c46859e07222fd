"""The ``svmmap`` command: ``svmmap reproduce``, ``svmmap learn``, ``svmmap classify``.

Each sub-command lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this module only dispatches. Errors a user can fix end with exit status 2 and
one line on stderr (``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys
from typing import List, Optional

from pyterrier_svmmap._version import __version__

#: sub-command → module providing add_arguments(parser) and run(args)
COMMANDS = {
    "reproduce": "pyterrier_svmmap.cli.reproduce",
    "learn": "pyterrier_svmmap.cli.learn",
    "classify": "pyterrier_svmmap.cli.classify",
    "letor": "pyterrier_svmmap.cli.letor",
}


class UsageError(Exception):
    """An error caused by the user's input: reported as one line, exit status 2."""


def plain(text: str) -> str:
    """A docstring as plain text for --help: ``literal`` and :role:`~target` markup removed."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svmmap", description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    parser.add_argument("--version", action="version", version=f"%(prog)s (pyterrier-svmmap) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(module)
        doc = plain(mod.__doc__ or "")
        p = sub.add_parser(name, help=doc.strip().splitlines()[0], description=doc, allow_abbrev=False,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
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
