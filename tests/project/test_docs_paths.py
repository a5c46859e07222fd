"""The README and docs/ name only files and modules that exist: a moved or renamed module fails here until the
pages that cite it follow (docs/architecture.md's walks name the files a change touches)."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

#: repository paths as the pages write them (``pyterrier_svmmap/svm/ranker.py``, ``benchmarks/bench_speed.py``)
PATH = re.compile(r"(?<![\w/.])((?:pyterrier_svmmap|benchmarks|tests|examples)/[\w/.-]*\w)")
#: dotted names (``pyterrier_svmmap.selection.engine.search``); not ``module:Class`` (the model files'
#: vocabulary) nor a wildcard such as ``measures.letor_*``
DOTTED = re.compile(r"(?<![\w/])(pyterrier_svmmap(?:\.\w+)+)(?![\w:*])")
#: names that are not modules: the logger of the compile notice
NOT_MODULES = {"pyterrier_svmmap.compile"}


def resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute path below the longest importable module of its prefix."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def missing(text: str) -> list:
    """The paths and dotted names ``text`` cites that do not exist."""
    return sorted({p for p in PATH.findall(text) if not (ROOT / p).exists()}
                  | {n for n in DOTTED.findall(text) if n not in NOT_MODULES and not resolves(n)})


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_pages_cite_existing_files_and_modules(page):
    gone = missing(page.read_text(encoding="utf-8"))
    assert not gone, f"{page.name} cites what does not exist: {gone}"


def test_the_check_sees_a_stale_name():
    assert PATH.findall("see `pyterrier_svmmap/svm/ranker.py`") == ["pyterrier_svmmap/svm/ranker.py"]
    assert resolves("pyterrier_svmmap.selection.engine.search")
    assert not resolves("pyterrier_svmmap.selection.engine.no_such_function")
    assert not resolves("pyterrier_svmmap.no_such_module")
    assert missing("`pyterrier_svmmap.estimator:SVMMap`, `pyterrier_svmmap.measures.letor_*`, "
                   "the logger pyterrier_svmmap.compile.") == []
    assert missing("`pyterrier_svmmap/svm/nothing.py` and pyterrier_svmmap.selection.nothing.") == \
        ["pyterrier_svmmap.selection.nothing", "pyterrier_svmmap/svm/nothing.py"]
