"""Shared test set-up.

* The tests are a package (``tests``), with one sub-package per room of ``pyterrier_svmmap``, mirroring its
  layout, and three that are no room's: ``project``, the rules of the whole repository (layering, the public
  API's documentation, the examples and notebooks); ``golden``, the saved models every change must
  reproduce; ``oracles``, the reference implementations the kernels are compared with. pytest puts the
  repository's root on ``sys.path`` for it (its default ``prepend`` import mode: the first folder above
  ``tests/__init__.py``), so that helpers shared by several rooms are imported as
  ``from tests.helpers import ...``, ``from tests.oracles.losses_reference import ...``.
* Where the tests' data lives is given by session fixtures: the repository's examples (``examples_dir``,
  ``letor_example_files``) and the shared collections beside the clone (``../shared/data``: ``vaswani_dir``,
  ``mq2008_dir``, ``mq2008_fold1``), which skip the test that asks for them, with the path they looked at,
  when the collection is absent.
* Every test module leaves ``os.environ`` as it found it (``distributed.LocalCluster`` sets
  ``OPENBLAS_NUM_THREADS=1`` and other variables in the process that starts it, which the child interpreters
  of later tests — the golden cases' — would inherit).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.data_paths import EXAMPLES, LETOR_TEST, LETOR_TRAIN, MQ2008, SHARED_DATA, VASWANI


class LetorFiles(NamedTuple):
    """The two small LETOR files of the examples."""
    train: Path
    test: Path


def _present(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"needs {what} at {path} (the shared data is expected next to the clone, "
                    f"in {SHARED_DATA})")
    return path


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The repository's ``examples/`` folder."""
    return EXAMPLES


@pytest.fixture(scope="session")
def letor_example_files() -> LetorFiles:
    """``(train, test)``: the two small LETOR files of the examples."""
    return LetorFiles(LETOR_TRAIN, LETOR_TEST)


@pytest.fixture(scope="session")
def vaswani_dir() -> Path:
    """The shared Vaswani collection (``docs.trec``, ``topics.trec``, ``qrels``); skips when it is absent."""
    _present(VASWANI / "docs.trec", "the shared Vaswani collection")
    return VASWANI


@pytest.fixture(scope="session")
def mq2008_dir() -> Path:
    """The shared MQ2008 folds (``Fold1`` … ``Fold5``); skips when they are absent."""
    _present(MQ2008 / "Fold1" / "train.txt", "the shared MQ2008 folds")
    return MQ2008


@pytest.fixture(scope="session")
def mq2008_fold1(mq2008_dir) -> Path:
    """MQ2008's ``Fold1`` (``train.txt``, ``vali.txt``, ``test.txt``); skips when it is absent."""
    return _present(mq2008_dir / "Fold1" / "test.txt", "MQ2008's Fold1").parent


@pytest.fixture(autouse=True, scope="module")
def _restore_environment():
    """Put ``os.environ`` back, after a test module and its module-scoped fixtures (a Dask cluster), as it was
    before them."""
    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)
