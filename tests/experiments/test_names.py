"""One name per system across ``svmmap reproduce`` and ``svmmap letor``, and the documentation's lists of them
are the registries' (:data:`~pyterrier_svmmap.experiments.systems.SYSTEMS`,
:data:`~pyterrier_svmmap.experiments.letor_learners.LEARNERS`)."""
import re
from pathlib import Path

from pyterrier_svmmap.experiments.letor_learners import LEARNERS
from pyterrier_svmmap.experiments.systems import PAPER_SYSTEMS, SYSTEMS

CLI_DOC = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


def _row(option: str) -> str:
    return next(line for line in CLI_DOC.splitlines() if line.startswith(f"| `{option}`"))


def test_the_learners_row_lists_every_letor_learner_in_order():
    listed = re.findall(r"`([a-z0-9@.-]+)`", _row("--learners").split("|")[3].split(";")[0])
    assert listed == list(LEARNERS)


def test_the_systems_row_names_every_system_outside_default():
    row = _row("--systems")
    named = set(re.findall(r"`([a-z0-9@.-]+)`", row))
    assert set(SYSTEMS) - set(PAPER_SYSTEMS) <= named


def test_a_name_in_both_registries_is_the_same_configuration():
    """svm-map is the package's default SVMMap() in both; the paper's bins and the raw features have their own
    names."""
    from pyterrier_svmmap import SVMMap
    for name in ("svm-map", "svm-map-paper", "svm-map-raw"):
        assert name in SYSTEMS and name in LEARNERS
    assert repr(SYSTEMS["svm-map"]()) == repr(SVMMap())
    assert LEARNERS["svm-map"].grid == ({"C": "auto", "features": "auto"},)
    paper = SYSTEMS["svm-map-paper"]()
    assert (paper.features, paper.prior, paper.selection) == ("bins", None, "validation")
    assert "50 quantile bins" in LEARNERS["svm-map-paper"].description
    raw = SYSTEMS["svm-map-raw"]()
    assert (raw.features, raw.normalise, raw.selection) == ("raw", None, "validation")
    assert "raw features as they are, C on vali" in LEARNERS["svm-map-raw"].description
