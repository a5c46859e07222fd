"""The golden test: the predictions of a handful of configurations, bit for bit as the reference code made them.

``reference.json`` and ``models/`` were written by ``generate.py`` with the code of the commit named in
``reference.json``; every case is recomputed here with the code under test and compared by sha256 of the
float64 scores (and of the output rows' keys), so that a refactor cannot change a model unnoticed. The saved
models (one written by ``SVMMap.save``, one by ``svmmap learn``) must still load and score identically.
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cases  # noqa: E402

REFERENCE = json.loads((HERE / "reference.json").read_text())["cases"]

pytestmark = pytest.mark.skipif(not (cases.MQ2008 / "train.txt").exists() or not (cases.VASWANI / "docs.trec").exists(),
                                reason="the shared data (../shared/data) is not beside the repository")


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    pytest.importorskip("pyterrier_pisa")
    pytest.importorskip("sklearn")
    return cases.compute(tmp_path_factory.mktemp("golden"))


@pytest.fixture(scope="module")
def vaswani_frames(tmp_path_factory):
    return cases.vaswani(tmp_path_factory.mktemp("vaswani"))


def _diff(expected: dict, actual: dict) -> list:
    return [f"{k}: expected {expected[k]!r}, got {actual.get(k)!r}" for k in expected if actual.get(k) != expected[k]]


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_case_is_bit_for_bit_the_reference(computed, name):
    assert not _diff(REFERENCE[name], computed[name]), "\n".join(_diff(REFERENCE[name], computed[name]))


def test_model_saved_by_the_reference_code_loads_and_scores_identically(vaswani_frames):
    import pyterrier as pt
    from pyterrier_svmmap import SVMMap
    frames, _ = vaswani_frames
    expected = REFERENCE["va-svmmap-bins-grid"]["transform"]
    for model in (SVMMap.load(HERE / "models" / "vaswani-svmmap"), pt.Artifact.load(str(HERE / "models" / "vaswani-svmmap"))):
        assert type(model).__name__ == "SVMMap"
        scores, _ = cases.frame_arrays(model.transform(frames["test"]))
        assert cases.digest(scores) == expected


def test_svmmap_classify_scores_with_a_model_written_by_the_reference_svmmap_learn(tmp_path):
    cases.svmmap_cli("classify", cases.MQ2008 / "test.txt", HERE / "models" / "mq-cli", tmp_path / "pred.txt")
    assert cases.digest((tmp_path / "pred.txt").read_bytes()) == REFERENCE["mq-cli"]["predictions"]


def test_the_digest_sees_a_one_ulp_change():
    a = np.linspace(0, 1, 10)
    b = a.copy()
    b[3] = np.nextafter(b[3], 2)
    with warnings.catch_warnings():
        assert cases.digest(a) != cases.digest(b)
