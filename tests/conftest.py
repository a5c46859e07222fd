"""Shared test set-up: the tests' folder is importable (``data_paths``, the golden cases) from the test
modules in its sub-folders, which mirror the package's rooms."""
import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
