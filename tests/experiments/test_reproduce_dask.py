"""``svmmap reproduce --workers N / --scheduler ADDRESS``: every trial one Dask task, with the results of
sequential trials; Ctrl-C keeps the finished trials; without dask, a one-line error saying what to install."""
import json
import re
import sys

import pandas as pd
import pytest

pytest.importorskip("pyterrier_pisa", reason="pyterrier-pisa is needed for the base runs")

from pyterrier_svmmap.cli import main  # noqa: E402
from pyterrier_svmmap.experiments.reproduce.trials import TrialStore  # noqa: E402


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """A synthetic collection; svm-map with one C and 10 bins, and AdaRank (the task carries two systems)."""
    from tests.helpers import _write_collection
    from pyterrier_svmmap import SVMMap
    import pyterrier_svmmap.experiments.reproduce.experiment as experiment
    import pyterrier_svmmap.experiments.systems as systems
    monkeypatch.setitem(systems.SYSTEMS, "svm-map", lambda: SVMMap(C=[1.0], n_bins=10))
    monkeypatch.setattr(experiment, "_save_pictures", lambda out, models: None)
    return _write_collection(tmp_path / "c")


def _argv(coll, out, *executor):
    return ["reproduce", "--collection", str(coll), "--out", str(out), "--trials", "4", "--train", "4",
            "--valid", "2", "--systems", "svm-map,adarank", "--no-progress", *executor]


def _comparable(out):
    res = json.loads((out / "results.json").read_text())
    res.pop("timings")
    for s in res["systems"]:
        s.pop("fit_seconds", None)
    return res


def test_dask_trials_give_the_sequential_results_and_resume_after_ctrl_c(tmp_path, tiny, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    assert main(_argv(tiny, tmp_path / "seq", "--jobs", "1")) == 0
    assert main(_argv(tiny, tmp_path / "dask", "--workers", "2")) == 0
    assert _comparable(tmp_path / "dask") == _comparable(tmp_path / "seq")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "dask" / "per_trial.csv"),
                                  pd.read_csv(tmp_path / "seq" / "per_trial.csv"))
    # one checkpoint per (trial, system), written by the client
    assert len(list((tmp_path / "dask" / "trials").glob("*.pkl"))) == 8

    # Ctrl-C while the client collects the results: one line, status 130, the finished trials kept
    real_save = TrialStore.save
    saved = []

    def interrupt_at_the_third(self, *a, **k):
        if len(saved) == 2:
            raise KeyboardInterrupt
        saved.append(1)
        return real_save(self, *a, **k)
    monkeypatch.setattr(TrialStore, "save", interrupt_at_the_third)
    capsys.readouterr()
    assert main(_argv(tiny, tmp_path / "resumed", "--workers", "2")) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert re.search(r"interrupted; 1 finished trials are kept in ", err), err
    assert not (tmp_path / "resumed" / "results.json").exists()
    monkeypatch.setattr(TrialStore, "save", real_save)
    assert main(_argv(tiny, tmp_path / "resumed", "--workers", "2")) == 0
    assert _comparable(tmp_path / "resumed") == _comparable(tmp_path / "seq")


def test_without_dask_workers_and_scheduler_are_one_line_errors(tmp_path, tiny, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)      # import dask.distributed fails
    for executor in (["--workers", "2"], ["--scheduler", "tcp://127.0.0.1:1"]):
        assert main(_argv(tiny, tmp_path / "out", *executor)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pip install 'pyterrier-svmmap[dask]'" in err
    assert not (tmp_path / "out").exists()                            # checked before any work


def test_unreachable_scheduler_is_a_one_line_error(tmp_path, tiny, capsys):
    pytest.importorskip("dask.distributed")
    assert main(_argv(tiny, tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
