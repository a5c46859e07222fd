"""The ``svmmap`` command: ``svmmap reproduce``, ``svmmap learn``, ``svmmap classify``.

Each sub-command's module provides ``add_arguments(parser)``, ``run(args) -> int`` and, optionally,
``interrupted(args) -> str``; this module dispatches and reports errors.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys
from typing import Callable, List, Optional, Sequence

from pyterrier_svmmap._version import __version__

#: sub-command → module providing add_arguments(parser) and run(args)
COMMANDS = {
    "reproduce": "pyterrier_svmmap.cli.reproduce",
    "learn": "pyterrier_svmmap.cli.learn",
    "classify": "pyterrier_svmmap.cli.classify",
    "letor": "pyterrier_svmmap.cli.letor",
    "warm-up": "pyterrier_svmmap.cli.warm_up",
}

#: sub-command → the first line of its module's docstring (so that ``svmmap --help`` imports none of them)
SUMMARIES = {
    "reproduce": "Reproduce the base-function comparison of Yue et al. (SIGIR 2007) on a test collection.",
    "learn": "Train a ranking model on an svmlight/LETOR file (like svm_map_learn / svm_rank_learn).",
    "classify": "Score an svmlight/LETOR file with a trained model (like svm_map_classify).",
    "letor": "Run the LETOR 5-fold protocol on a LETOR directory (Fold1..FoldK with train/vali/test.txt) and "
             "print the table.",
    "warm-up": "Compile the numba kernels ahead, so that the first svmmap learn (or fit) does not wait for them.",
}


def integer(text: str, ok: Callable[[int], bool], expected: str) -> int:
    """The value of an integer option, ``ok`` or refused as ``expected ..., got TEXT``."""
    try:
        n: Optional[int] = int(text)
    except ValueError:
        n = None
    if n is None or not ok(n):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return n


def jobs(text: str) -> int:
    """The value of a ``-j N`` option: a non-zero number of threads (negative: all cores but |N| − 1)."""
    return integer(text, lambda n: n != 0, "a non-zero number of threads (-1: every core)")


class UsageError(Exception):
    """An error caused by the user's input: reported as one line, exit status 2."""


#: exit status after Ctrl-C (128 + SIGINT, the shell's convention)
EXIT_INTERRUPTED = 130

#: what :func:`main` reports as one line ``svmmap COMMAND: error: ...`` with exit status 2
USER_ERRORS = (UsageError, ValueError, OSError)


class Parser(argparse.ArgumentParser):
    """argparse's parser with its errors on one line, ``svmmap COMMAND: error: ...`` (exit status 2)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def interrupt_in_chain(e: BaseException) -> bool:
    """Whether ``e`` was caused by Ctrl-C (native code interrupted by SIGINT, e.g. PISA's, raises a SystemError
    whose cause or context is the KeyboardInterrupt)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def plain(text: str) -> str:
    """A docstring as plain text for --help: ``literal`` and :role:`~target` markup removed."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", lambda m: m.group(1).rsplit(".", 1)[-1], text)
    return text.replace("``", "")


def chosen_command(argv: Optional[List[str]]) -> Optional[str]:
    """The sub-command named in ``argv`` (its first argument that is not an option), or None."""
    first = next((arg for arg in (sys.argv[1:] if argv is None else argv) if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(argv: Optional[List[str]] = None, load: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The ``svmmap`` parser: every sub-command with its :data:`SUMMARIES`, the options of those of ``load``
    (default: the one named in ``argv``), whose modules alone are imported."""
    load = [c for c in [chosen_command(argv)] if c] if load is None else list(load)
    parser = Parser(prog="svmmap", description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logging")
    parser.add_argument("--version", action="version", version=f"%(prog)s (pyterrier-svmmap) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        if name not in load:
            sub.add_parser(name, help=SUMMARIES[name], allow_abbrev=False)
            continue
        mod = importlib.import_module(module)
        p = sub.add_parser(name, help=SUMMARIES[name], description=plain(mod.__doc__ or ""), allow_abbrev=False,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _interrupted=getattr(mod, "interrupted", None), _parser=p)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``svmmap`` with ``argv`` (default: the process's arguments); the exit status. An error the user can
    fix (:data:`USER_ERRORS`) is one line on stderr and status 2; Ctrl-C is one line ``svmmap COMMAND:
    interrupted; ...`` (what the command's ``interrupted(args)`` says was kept) and status 130; ``--debug``
    shows the traceback of either."""
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:                               # reported by the sub-command's parser: "svmmap learn: error: ..."
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args._run(args) or 0)
    except USER_ERRORS as e:
        if args.debug:
            raise
        print(f"svmmap {args.command}: error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemError) as e:
        if args.debug or not interrupt_in_chain(e):
            raise
        said = args._interrupted(args) if args._interrupted else ""
        print(f"svmmap {args.command}: interrupted{'; ' + said if said else ''}", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
