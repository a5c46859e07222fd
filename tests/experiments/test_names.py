"""One name per configuration across ``svmmap reproduce`` and ``svmmap letor``
(:data:`~pyterrier_svmmap.experiments.systems.CONFIGS`), and the documentation's lists of them are the
registries' (:data:`~pyterrier_svmmap.experiments.systems.SYSTEMS`,
:data:`~pyterrier_svmmap.experiments.letor.LEARNERS`)."""
import re
from pathlib import Path

from pyterrier_svmmap.experiments.letor import LEARNERS
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


def _configuration(system, learner) -> dict:
    """What reproduce's estimator ``system`` and letor's learner ``learner`` train, side by side: for a
    structural SVM every model parameter of ``StructSVMRanker`` (the estimator's value, the ranker's value), for
    an Approx learner the grid of (α, β), T, η, the seed and the feature layout."""
    from pyterrier_svmmap import ApproxAP, ApproxNDCG, StructSVM
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    assert learner.make is not None, f"{learner.name}: letor's learner is not built from CONFIGS"
    built = learner.make(learner.grid)
    est = system.get_params(deep=False)
    if isinstance(system, StructSVM):
        assert isinstance(built, StructSVMRanker)
        est.setdefault("loss", "map")                       # SVMMap: the MAP loss, not a parameter
        est.setdefault("loss_params", None)
        pairs = {}
        for k in StructSVMRanker.MODEL_PARAMS:
            assert k in est, f"{learner.name}: the estimator has no {k}"
            mine, theirs = est[k], getattr(built, k)
            pairs[k] = (list(mine) if isinstance(mine, (list, tuple)) else mine,
                        list(theirs) if isinstance(theirs, (list, tuple)) else theirs)
        return pairs
    assert isinstance(system, (ApproxAP, ApproxNDCG)), type(system)
    kind, rankers = built
    measure = "ap" if isinstance(system, ApproxAP) else "ndcg"
    grid = sorted((a, b) for a in system.alphas for b in (system.betas if measure == "ap" else [None]))
    return dict(grid=(grid, sorted((r.alphas[0], r.betas[0] if r.betas else None) for r in rankers)),
                measure=(measure, {r.measure for r in rankers}.pop()),
                n_iter=(system.n_iter, {r.n_iter for r in rankers}.pop()),
                learning_rate=(system.learning_rate, {r.learning_rate for r in rankers}.pop()),
                random_state=(system.random_state, {r.random_state for r in rankers}.pop()),
                features=(system.features, kind))


def _differences(pairs: dict) -> dict:
    return {k: v for k, v in pairs.items() if v[0] != v[1]}


def test_a_name_in_both_registries_is_the_same_configuration():
    """Every name that reproduce and letor both run is a configuration of CONFIGS, and reproduce's estimator and
    letor's fit of it train with the same parameters (the C grid, φ, the prior, the selection, …)."""
    from pyterrier_svmmap.experiments.systems import CONFIGS
    shared = [n for n in SYSTEMS if n in LEARNERS]
    assert {"svm-map", "svm-map-paper", "svm-map-raw"} <= set(shared)
    for name in shared:
        assert name in CONFIGS, f"{name}: run by both commands but not in CONFIGS"
        assert _differences(_configuration(SYSTEMS[name](), LEARNERS[name])) == {}, name


def test_every_configuration_builds_the_same_in_both_commands():
    """Every name of CONFIGS, whichever command runs it today, builds the same parameters in reproduce's builder
    and letor's; and a command that runs a name of CONFIGS runs that configuration."""
    from pyterrier_svmmap.experiments import letor, systems
    from pyterrier_svmmap.experiments.systems import CONFIGS
    for name in CONFIGS:
        assert _differences(_configuration(systems.build(name), letor.from_config(name))) == {}, name
    for name in set(SYSTEMS) & set(CONFIGS):
        assert repr(SYSTEMS[name]()) == repr(systems.build(name)), name
    for name in set(LEARNERS) & set(CONFIGS):
        ref = letor.from_config(name)
        assert LEARNERS[name].grid == ref.grid, name
        assert _differences(_configuration(systems.build(name), LEARNERS[name])) == {}, name


def test_the_default_and_the_papers_configurations_keep_their_meaning():
    """svm-map is the package's default SVMMap(); svm-map-paper the paper's bins; svm-map-raw the scores as they
    are; the other losses the paper's bins (Yue et al. Table 9), letor's raw-feature losses their own names."""
    from pyterrier_svmmap import DEFAULT_C_GRID, SVMMap
    assert repr(SYSTEMS["svm-map"]()) == repr(SVMMap())
    assert LEARNERS["svm-map"].grid == ({"C": "auto", "features": "auto"},)
    paper = SYSTEMS["svm-map-paper"]()
    assert (paper.features, paper.n_bins, paper.prior, paper.selection) == ("bins", 50, None, "validation")
    assert list(paper.C) == list(DEFAULT_C_GRID)
    raw = SYSTEMS["svm-map-raw"]()
    assert (raw.features, raw.normalise, raw.selection) == ("raw", None, "validation")
    for name in ("svm-roc", "svm-ndcg@10", "svm-acc2"):
        assert SYSTEMS[name]().features == "bins" and name not in LEARNERS
        std = LEARNERS[f"{name}-std"].make(LEARNERS[f"{name}-std"].grid)
        assert (std.features, std.normalise) == ("raw", "query")
