"""Cold start: a first fit after ``pip install`` in a fresh environment against the same fit warm, what the
install costs, the compile notice, and what a fresh ``svmmap`` process pays before its work.

Usage::

    python benchmarks/bench_coldstart.py [--quick] [--only fresh,startup] [--repeat N] [--skip-empty-cache]

Sections (setups and results in docs/performance.md):

* ``fresh``: new virtual environments, each with a non-editable ``pip install`` of this working tree (the
  running environment's dependencies), run :data:`SCRIPT` (``SVMMap().fit`` and ``transform`` of 20 queries,
  imports included) in new processes: the first run ÷ the median of ``--repeat`` warm runs (target ≤ 3×). The
  reference is the same install with ``PYTERRIER_SVMMAP_PRECOMPILE=0`` (no kernels in the wheel); the install's
  time less the reference's is the cost of compiling ahead (target ≤ 60 s). The compile notice must come in a
  first run that compiles and in no other, also (unless ``--quick`` or ``--skip-empty-cache``) from the source
  tree with an empty ``NUMBA_CACHE_DIR``;
* ``startup``: ``svmmap learn`` and ``svmmap classify`` on a 40-line file in fresh processes, their ratio, and
  numba's own share (its import and one cached kernel's load).

About 5 minutes on 2 cores, most of it compiling (``--quick``: 2 warm runs, no empty-cache tree).
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import CLI, ENV, REPO, main, repeat, rounds, runs, target, timed

NOTICE = "pyterrier-svmmap: compiling kernels, once"
SCRIPT = """
import numpy as np, pandas as pd
from pyterrier_svmmap import SVMMap
rng = np.random.default_rng(0)
rows, qrels = [], []
for q in range(20):
    for d in range(50):
        rel = rng.random() < 0.2
        rows.append(dict(qid=str(q), docno=f"d{d}", query="x", features=np.array(
            [rel + rng.normal(), rng.normal(), 0.5 * rel + rng.normal(), rng.normal()])))
        if rel:
            qrels.append(dict(qid=str(q), docno=f"d{d}", label=1))
res, qrels = pd.DataFrame(rows), pd.DataFrame(qrels)
SVMMap().fit(res, qrels).transform(res)
"""
#: numba's own start in a fresh process: its import, and its CPU target with a first cached kernel (seconds)
NUMBA_ONLY = ("import time; import numpy as np; t1 = time.perf_counter(); import numba; t2 = time.perf_counter(); "
              "import pyterrier_svmmap.features._kernels as k; k.cumulative_table(np.zeros(4), 2, 2); "
              "print(t2 - t1, time.perf_counter() - t2)")


def fresh_venv(folder: Path, **extra_env: str):
    """A new virtual environment with a non-editable install of the working tree, its dependencies those of the
    running environment (a ``.pth`` file names its ``site-packages``); (the install's seconds, the CPU seconds
    of its processes, its ``site-packages``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next((folder / "lib").glob("python*/site-packages"))
    (site / "dependencies.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    t, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(REPO)],
                   check=True, capture_output=True, env=environment(**extra_env))
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t, done.ru_utime + done.ru_stime - cpu.ru_utime - cpu.ru_stime, site


def run(python: str, env: dict, code: str = SCRIPT, *args: str):
    """(seconds, stderr) of ``python -c code args`` in ``env``."""
    p, seconds = timed(subprocess.run, [python, "-c", code, *args], env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr)
    return seconds, p.stderr


def environment(cache_dir: Path = None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    return dict(env, **({"NUMBA_CACHE_DIR": str(cache_dir)} if cache_dir else {}), **extra)


def cached(folder: Path) -> int:
    """How many compiled kernels (one data file per kernel and signature) numba keeps in ``folder``."""
    return sum(1 for _ in folder.rglob("*.nbc"))


#: the package's own install, and the reference: the same install with the wheel's kernels left out
INSTALL, REFERENCE = "pip install", "pip install, no kernels in the wheel"


def fresh(args):
    """a first fit after pip install alone against the same fit warm, and the install's time"""
    n_warm = repeat(args)
    with tempfile.TemporaryDirectory(prefix="svmmap-coldstart-") as tmp:
        tmp, cwd = Path(tmp), os.getcwd()
        os.chdir(tmp)                                         # python -c puts the current folder first on sys.path
        try:
            envs, installed = {}, {}
            for i, (name, extra) in enumerate(((REFERENCE, {"PYTERRIER_SVMMAP_PRECOMPILE": "0"}), (INSTALL, {}))):
                seconds, cpu, site = fresh_venv(tmp / f"venv{i}", **extra)
                python = str(tmp / f"venv{i}" / "bin" / "python")
                found = run(python, environment(), "import sys, pyterrier_svmmap as p; "
                            "print(p.__file__, file=sys.stderr)")[1]
                assert found.startswith(str(site)), found
                installed[name] = (seconds, cached(site))
                envs[name] = (python, environment(), site / "pyterrier_svmmap")
                print(f"{name}: {seconds:.1f} s ({cpu:.1f} CPU s), {installed[name][1]} kernels in the wheel",
                      flush=True)
            if not (args.skip_empty_cache or args.quick):
                (tmp / "numba-cache").mkdir()
                envs["source, empty NUMBA_CACHE_DIR"] = (sys.executable, environment(
                    tmp / "numba-cache", PYTHONPATH=str(REPO)), tmp / "numba-cache")
            first = {name: run(python, env) for name, (python, env, _) in envs.items()}
            compiled = {name: cached(where) - installed.get(name, (0, 0))[1] for name, (_, _, where) in envs.items()}
            warm = {name: [] for name in envs}
            notices = 0
            for _ in range(n_warm):
                for name, (python, env, _) in envs.items():
                    seconds, err = run(python, env)
                    warm[name].append(seconds)
                    notices += NOTICE in err
        finally:
            os.chdir(cwd)
        print(f"\n{'environment':38s} {'first':>7s} {'warm':>7s} {'ratio':>7s}  notice  compiled by the first run")
        ratio = {}
        for name in envs:
            ratio[name] = first[name][0] / float(np.median(warm[name]))
            print(f"{name:38s} {first[name][0]:6.1f}s {np.median(warm[name]):6.2f}s {ratio[name]:6.1f}×  "
                  f"{'yes' if NOTICE in first[name][1] else 'no ':6s}  {compiled[name]}")
    extra = installed[INSTALL][0] - installed[REFERENCE][0]
    target(f"a fresh environment's first fit after pip install alone ≤ 3× the warm fit: {ratio[INSTALL]:.2f}× "
           f"({first[INSTALL][0]:.1f} s against {np.median(warm[INSTALL]):.2f} s; without the wheel's kernels "
           f"{ratio[REFERENCE]:.1f}×)", ratio[INSTALL] <= 3)
    target(f"the install ≤ 60 s longer than without compiling: {installed[INSTALL][0]:.1f} s against "
           f"{installed[REFERENCE][0]:.1f} s, +{extra:.1f} s", extra <= 60)
    target("the notice comes with a first run that compiles, and with no other run: "
           f"{', '.join(f'{n}: {compiled[n]} compiled, notice {NOTICE in first[n][1]}' for n in envs)}; "
           f"warm runs {notices} of {n_warm * len(envs)}",
           all((NOTICE in first[n][1]) == (compiled[n] > 0) for n in envs) and notices == 0)


def startup(args):
    """svmmap learn and classify on a 40-line file, in fresh processes"""
    n_rounds = repeat(args)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        train, model = Path(tmp) / "train.txt", Path(tmp) / "model"
        train.write_text("".join(f"{1 if d == 0 else int(d > 1 and rng.random() < 0.3)} qid:{q + 1} " + " ".join(
            f"{i + 1}:{rng.random():.4f}" for i in range(5)) + "\n" for q in range(4) for d in range(10)))
        commands = {"learn": ["learn", "-c", "1", "--force", str(train), str(model)],
                    "classify": ["classify", str(train), str(model), str(Path(tmp) / "pred")]}
        t = rounds({k: lambda argv=argv: run(sys.executable, ENV, CLI, *argv) for k, argv in commands.items()},
                   n_rounds)
        parts = np.array([[float(x) for x in subprocess.run([sys.executable, "-c", NUMBA_ONLY], env=ENV, check=True,
                                                            capture_output=True, text=True).stdout.split()]
                          for _ in range(n_rounds)])
    learn, classify = np.median(t["learn"]), np.median(t["classify"])
    print(f"svmmap learn:    {runs(t['learn'])}\nsvmmap classify: {runs(t['classify'])}")
    print(f"learn ÷ classify {learn / classify:.2f}×; of the {learn - classify:.3f} s between them, numba's own: its "
          f"import {np.median(parts[:, 0]):.3f} s + its CPU target and first cached kernel "
          f"{np.median(parts[:, 1]):.3f} s")


if __name__ == "__main__":
    main(__doc__, dict(fresh=fresh, startup=startup), repeat="warm runs per environment, or rounds (default 5)",
         options=[(("--skip-empty-cache",), dict(action="store_true",
                                                 help="leave out the source tree with an empty cache"))])
