"""``svmmap`` imports only the sub-command that runs: ``learn`` starts as ``classify`` does, and loads numba
only for the fit; ``svmmap warm-up`` compiles (or loads) the kernels."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyterrier_svmmap import cli

ROOT = Path(__file__).resolve().parents[2]


def test_summaries_are_the_modules_first_docstring_lines():
    for name, module in cli.COMMANDS.items():
        doc = cli.plain(importlib.import_module(module).__doc__ or "")
        assert cli.SUMMARIES[name] == doc.strip().splitlines()[0], name


def test_only_the_chosen_command_is_loaded():
    assert cli.chosen_command(["--debug", "learn", "-c", "1", "x", "m"]) == "learn"
    assert cli.chosen_command(["--help"]) is None
    assert cli.chosen_command(["nope"]) is None
    parser = cli.build_parser(["classify", "a", "b", "c"])
    args = parser.parse_args(["classify", "a", "b", "c"])
    assert args._run.__module__ == "pyterrier_svmmap.cli.classify"


def write_file(path, n_queries=4, per_query=10, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for q in range(n_queries):
            for d in range(per_query):
                label = int(d == 0 or rng.random() < 0.3) if d != 1 else 0
                feats = " ".join(f"{i + 1}:{rng.random():.4f}" for i in range(5))
                f.write(f"{label} qid:{q + 1} {feats} # d{q}_{d}\n")


PROBE = """
import json, sys
from pyterrier_svmmap.cli import main
argv = json.loads(sys.argv[1])
rc = main(argv)
top = {m.split(".")[0] for m in sys.modules}
print(json.dumps(dict(rc=rc, top=sorted(top & {"numba", "pandas", "pyterrier", "sklearn", "dask", "matplotlib", "lightgbm", "scipy"}),
                      experiments=any(m.startswith("pyterrier_svmmap.experiments") for m in sys.modules))))
"""


def probe(argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_learn_and_classify_import_nothing_they_do_not_need(tmp_path):
    write_file(tmp_path / "train.txt")
    learn = probe(["learn", "-c", "1", str(tmp_path / "train.txt"), str(tmp_path / "model")])
    assert learn["rc"] == 0 and not learn["experiments"]
    assert set(learn["top"]) <= {"numba", "scipy"}       # numba (and the scipy its linear algebra loads) for the fit
    classify = probe(["classify", str(tmp_path / "train.txt"), str(tmp_path / "model"), str(tmp_path / "out")])
    assert classify["rc"] == 0 and classify["top"] == [] and not classify["experiments"]


def test_learn_help_does_not_load_numba(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = ("import sys\nfrom pyterrier_svmmap.cli import main\ntry:\n    main(['learn', '--help'])\n"
            "except SystemExit:\n    pass\nprint('numba' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert p.stdout.strip().splitlines()[-1] == "False" and "-j N" in p.stdout


def test_learn_jobs_option(tmp_path):
    write_file(tmp_path / "train.txt")
    args = cli.build_parser(["learn"]).parse_args(["learn", "-j", "2", str(tmp_path / "train.txt"), "m"])
    assert args.n_jobs == 2
    with pytest.raises(SystemExit):
        cli.build_parser(["learn"]).parse_args(["learn", "-j", "0", str(tmp_path / "train.txt"), "m"])


def test_warm_up_command_runs(caplog, monkeypatch):
    """svmmap warm-up runs the tiny fits once and reports the seconds warm_up() measured around them: at
    least the fits' own time, at most the call's time measured from outside."""
    import logging
    import time
    from pyterrier_svmmap.cli import warm_up
    real_warm_up, real_fits = warm_up.warm_up, warm_up._fits
    fits, calls = [], []

    def timed_fits(*args, **kwargs):
        start = time.perf_counter()
        real_fits(*args, **kwargs)
        fits.append(time.perf_counter() - start)

    def timed_warm_up(*args, **kwargs):
        start = time.perf_counter()
        seconds = real_warm_up(*args, **kwargs)
        calls.append((seconds, time.perf_counter() - start))
        return seconds
    from pyterrier_svmmap.io import svmlight
    real_parse, parsed = svmlight.parse_chunk, []

    def recorded_parse(data, limit, comments=True, compiled=True):
        parsed.append(compiled)
        return real_parse(data, limit, comments, compiled)
    monkeypatch.setattr(warm_up, "_fits", timed_fits)
    monkeypatch.setattr(warm_up, "warm_up", timed_warm_up)
    monkeypatch.setattr(svmlight, "parse_chunk", recorded_parse)
    with caplog.at_level(logging.INFO, logger=warm_up.log.name):     # whatever level an earlier test left
        assert cli.main(["warm-up"]) == 0
    (seconds, outside), = calls
    assert len(fits) == 1 and 0 < fits[0] <= seconds <= outside
    assert parsed == [True]                     # svmmap learn's compiled svmlight parser is compiled too
    assert f"kernels ready in {seconds:.1f} s" in caplog.text


@pytest.mark.parametrize("apart", [False, True])
def test_warm_up_second_process_runs_clean(apart):
    """The warm-up's second process compiles the QP, says so on stdout, then (``apart``) fits the other
    learners: it exits 0 with nothing on stderr (a failure there would print a traceback at the user)."""
    import subprocess
    import sys
    from pyterrier_svmmap.cli.warm_up import SECOND_PROCESS
    done = subprocess.run([sys.executable, "-c", SECOND_PROCESS] + (["apart"] if apart else []),
                          capture_output=True, text=True, timeout=600)
    assert (done.returncode, done.stdout, done.stderr) == (0, "qp\n", "")


def test_classify_jobs_option_gives_the_same_scores(tmp_path):
    write_file(tmp_path / "train.txt")
    assert cli.main(["learn", "-c", "1", "--bins", "5", str(tmp_path / "train.txt"), str(tmp_path / "m")]) == 0
    outs = []
    for j in ("1", "3"):
        out = tmp_path / f"p{j}"
        assert cli.main(["classify", "-j", j, str(tmp_path / "train.txt"), str(tmp_path / "m"), str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
