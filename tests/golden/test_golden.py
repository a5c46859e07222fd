"""The golden test: the predictions of a handful of configurations, bit for bit as the reference code made them.

``reference.json`` was written by ``generate.py`` with the code of the commit named in it; every case is recomputed here with the code under test and compared by sha256 of the
float64 scores (and of the output rows' keys), so that a refactor cannot change a model unnoticed. The models
an earlier version saved (``saved_models/``: one written by ``SVMMap.save``, one by ``svmmap learn``) must
still load and score as they did then.
The cases run in a child interpreter with the reference's OpenBLAS kernel and thread count
(``cases.REFERENCE_BLAS_CORE``): the package's own sums do not depend on a BLAS, but a few of its learners'
small products still go through numpy's ``@``, whose CPU kernels round in orders of their own.
"""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.golden import cases

HERE = Path(__file__).resolve().parent

_FILE = json.loads((HERE / "reference.json").read_text())
REFERENCE = _FILE["cases"]
MODEL_JSON = _FILE["mq_cli_model_json"]
SAVED = json.loads((cases.SAVED_MODELS / "expected.json").read_text())

pytestmark = pytest.mark.skipif(not (cases.MQ2008 / "train.txt").exists() or not (cases.VASWANI / "docs.trec").exists(),
                                reason="the shared data (../shared/data) is not beside the repository")


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    pytest.importorskip("pyterrier_pisa")
    pytest.importorskip("sklearn")
    return cases.compute_in_fresh_interpreter(tmp_path_factory.mktemp("golden"))


def _diff(expected: dict, actual: dict) -> list:
    return [f"{k}: expected {expected[k]!r}, got {actual.get(k)!r}" for k in expected if actual.get(k) != expected[k]]


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_case_is_bit_for_bit_the_reference(computed, name):
    computed = {k: v for k, v in computed[name].items() if k != "model_json"}
    assert not _diff(REFERENCE[name], computed), "\n".join(_diff(REFERENCE[name], computed))


def test_svmmap_learn_writes_the_reference_model_json(computed):
    """The model.json that ``svmmap learn`` writes is the reference's, but for timings, versions and the
    folder of the training file."""
    differences = cases.json_differences(MODEL_JSON, computed["mq-cli"]["model_json"])
    assert not differences, "\n".join(differences)


def test_json_differences_sees_a_changed_parameter_a_one_ulp_change_and_a_new_key():
    reference = cases.model_json(cases.SAVED_MODELS / "mq-cli")
    assert reference["state"]["training"]["source"] == "letor/MQ2008/Fold1/train.txt"
    assert MODEL_JSON["state"]["training"]["source"] == "letor/MQ2008/Fold1/train.txt"
    assert not cases.json_differences(reference, reference)
    changed = json.loads(json.dumps(reference))
    changed["params"]["n_bins"] = 21
    assert cases.json_differences(reference, changed) == ["/params/n_bins: expected 20, got 21"]
    changed["state"]["history"][0]["primal"] = float(np.nextafter(changed["state"]["history"][0]["primal"], 1))
    changed["state"]["extra"] = 1
    assert len(cases.json_differences(reference, changed)) == 3


def test_a_model_saved_by_an_earlier_version_loads_and_scores_as_it_did(computed):
    for how in ("load", "artifact"):
        assert computed["reloaded"][how] == dict(type="SVMMap", transform=SAVED["vaswani-svmmap"])


def test_svmmap_classify_scores_with_a_model_written_by_an_earlier_svmmap_learn_as_it_did(computed):
    assert computed["reloaded"]["classify"] == SAVED["mq-cli"]


def test_the_digest_sees_a_one_ulp_change():
    a = np.linspace(0, 1, 10)
    b = a.copy()
    b[3] = np.nextafter(b[3], 2)
    with warnings.catch_warnings():
        assert cases.digest(a) != cases.digest(b)
