"""Cold start: a small script's first run in a fresh environment against the same script warm, and the
compile notice.

Usage::

    python benchmarks/bench_coldstart.py [--repeat N] [--skip-empty-cache]

The script (:data:`SCRIPT`): build 20 queries × 50 candidates × 4 base functions as a PyTerrier frame,
``SVMMap().fit`` (the package's default selection) and ``transform``, in a new process; its wall time, imports
included. Environments, each a new non-editable install of this working tree (``pip install --no-deps
--target DIR .``) whose own ``__pycache__`` folders, where numba caches the kernels of an installed package,
start empty (numba's cache holds nothing else of this package, and ``NUMBA_CACHE_DIR`` is unset):

* ``install``: the first run after ``pip install`` alone (every kernel the fit uses compiles);
* ``install + warm-up``: the README's setup, ``pip install`` then ``svmmap warm-up`` (timed apart), and the
  first run after it;
* ``source, empty NUMBA_CACHE_DIR`` (skipped with ``--skip-empty-cache``): the working tree itself (as an
  editable install runs it) with ``NUMBA_CACHE_DIR`` pointing to an empty folder.

Each environment's first run is divided by the median of ``--repeat`` warm runs of the same environment,
the warm runs of all environments interleaved. The target (issue 31) is judged on the README's setup:
first run ≤ 3× warm. Also printed: whether the first run's stderr had the notice
(``pyterrier-svmmap: compiling kernels, once, …``) and the warm runs' had none, and where the cache went.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
NOTICE = "pyterrier-svmmap: compiling kernels, once"
TARGET = 3.0

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
model = SVMMap().fit(res, qrels)
model.transform(res)
"""

CLI = "import sys; from pyterrier_svmmap.cli import main; sys.exit(main(sys.argv[1:]))"


def fresh_venv(folder: Path) -> Path:
    """A new virtual environment in ``folder`` with a non-editable install of the working tree; its
    dependencies are the running environment's (a ``.pth`` file names its ``site-packages``, whose own ``.pth``
    files, e.g. an editable install's, are then not read). Returns the environment's ``site-packages``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next((folder / "lib").glob("python*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "dependencies.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(REPO)],
                   check=True, capture_output=True)
    return site


def run(python: str, env: dict, code: str = SCRIPT, *args: str):
    """(seconds, stderr) of ``python -c code args`` in ``env``."""
    t = time.perf_counter()
    p = subprocess.run([python, "-c", code, *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if p.returncode:
        raise RuntimeError(p.stderr)
    return seconds, p.stderr


def environment(cache_dir: Path = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def cached_files(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.nbi"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="warm runs per environment (default 5)")
    ap.add_argument("--skip-empty-cache", action="store_true", help="leave out the working tree with an empty "
                    "NUMBA_CACHE_DIR")
    args = ap.parse_args()
    print(f"pyterrier-svmmap cold start; python {sys.version.split()[0]}, numpy {np.__version__}; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="svmmap-coldstart-") as tmp:
        tmp = Path(tmp)
        os.chdir(tmp)                        # python -c puts the current folder first on sys.path
        envs = {}
        for name in ("install", "install + warm-up"):
            folder = tmp / name.replace(" + ", "-")
            site = fresh_venv(folder)
            python = str(folder / "bin" / "python")
            where = subprocess.run([python, "-c", "import pyterrier_svmmap as p; print(p.__file__)"], env=environment(),
                                   capture_output=True, text=True, check=True).stdout.strip()
            assert where.startswith(str(site)), where
            assert cached_files(site) == 0
            envs[name] = (python, environment(), site / "pyterrier_svmmap")
        if not args.skip_empty_cache:
            (tmp / "numba-cache").mkdir()
            envs["source, empty NUMBA_CACHE_DIR"] = (sys.executable, dict(environment(tmp / "numba-cache"),
                                                                          PYTHONPATH=str(REPO)), tmp / "numba-cache")
        python, env, site = envs["install + warm-up"]
        warm_up_s, _ = run(python, env, CLI, "warm-up")
        print(f"svmmap warm-up after the install: {warm_up_s:.1f} s; {cached_files(site)} kernel index files "
              f"cached in {site.relative_to(tmp)}/**/__pycache__", flush=True)
        first = {}
        for name, (python, env, where) in envs.items():
            first[name] = run(python, env)
            print(f"{name}: first run {first[name][0]:.1f} s; notice on stderr: "
                  f"{'yes' if NOTICE in first[name][1] else 'no'}; {cached_files(where)} kernel index files in "
                  f"{where.relative_to(tmp)}", flush=True)
        warm = {name: [] for name in envs}
        warm_notices = 0
        for _ in range(args.repeat):
            for name, (python, env, _where) in envs.items():
                seconds, err = run(python, env)
                warm[name].append(seconds)
                warm_notices += NOTICE in err
        print(f"\nwarm runs (median of {args.repeat}, interleaved); notice in {warm_notices} of "
              f"{args.repeat * len(envs)} warm runs (expected 0)")
        print(f"{'environment':34s} {'first':>7s} {'warm':>7s} {'ratio':>7s}  notice")
        for name in envs:
            med = float(np.median(warm[name]))
            ratio = first[name][0] / med
            said = "yes" if NOTICE in first[name][1] else "no"
            print(f"{name:34s} {first[name][0]:6.1f}s {med:6.2f}s {ratio:6.1f}×  {said}")
        setup = first["install + warm-up"][0] / float(np.median(warm["install + warm-up"]))
        print(f"\ntarget: the README's setup (pip install, svmmap warm-up), first run ≤ {TARGET:g}× warm: "
              f"{setup:.2f}× {'✓' if setup <= TARGET else '✗'}")
        bare = first["install"][0] / float(np.median(warm["install"]))
        print(f"pip install alone (the kernels compile in the first run): {bare:.1f}× "
              f"{'✓' if bare <= TARGET else '✗'}; notice {'✓' if NOTICE in first['install'][1] else '✗'}; "
              f"silent when warm {'✓' if warm_notices == 0 else '✗'}")
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
