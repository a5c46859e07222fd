"""Kernels compiled ahead: a wheel holds numba's cache of every kernel a fit runs (``setup.py`` runs the warm-up
on the built package), valid once pip has copied it elsewhere with new mtimes; and the cheaper selection that
replaced ``np.partition`` (its compile cost most of a first fit's feature encoding) returns its value."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyterrier_svmmap._jit import COMPILE_MESSAGE

ROOT = Path(__file__).resolve().parents[2]

#: prints, as JSON, every (kernel, signature) the package's loaded kernels have (compiled or loaded from the
#: cache): after a run, the kernels it called from Python
SIGNATURES = """
import json, sys
print(json.dumps(sorted(f"{name}.{key} {sig}" for name, m in list(sys.modules.items())
                        if name.startswith("pyterrier_svmmap.") for key, f in vars(m).items()
                        if hasattr(f, "py_func") for sig in f.signatures)))
"""
#: a default fit and its predictions, as a user's first script runs them
DEFAULT_FIT = """
import numpy as np, pandas as pd
from pyterrier_svmmap import SVMMap
rng = np.random.default_rng(0)
res = pd.DataFrame([dict(qid=str(q), docno=f"d{d}", query="x", features=rng.normal(size=4) + (d % 5 == 0))
                    for q in range(20) for d in range(50)])
qrels = res[res.docno.str[1:].astype(int) % 5 == 0][["qid", "docno"]].assign(label=1)
SVMMap().fit(res, qrels).transform(res)
"""


def signatures(code: str, **env) -> set:
    p = subprocess.run([sys.executable, "-c", code + SIGNATURES], capture_output=True, text=True, timeout=1200,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), **env), cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stdout.splitlines()[-1]))


def test_the_wheels_warm_up_compiles_every_kernel_of_a_default_fit():
    """What the wheel holds (``setup.py``'s warm-up, ``every_learner=False``, whichever process compiles the
    kernels) covers what a default fit and its predictions call: the first fit after pip install compiles
    nothing; the whole warm-up (``svmmap warm-up``) compiles more."""
    setup_code = (ROOT / "setup.py").read_text()
    assert 'WARM_UP = "from pyterrier_svmmap.cli.warm_up import warm_up; warm_up(every_learner=False)"' in setup_code
    wheel = signatures("from pyterrier_svmmap.cli.warm_up import warm_up; "
                       "warm_up(qp_process=False, every_learner=False)")
    fitted = signatures(DEFAULT_FIT)
    assert fitted and fitted <= wheel, sorted(fitted - wheel)
    every = signatures("from pyterrier_svmmap.cli.warm_up import warm_up; warm_up(qp_process=False)")
    assert wheel < every


def test_the_warm_up_compiles_the_qp_once_in_its_second_process(tmp_path):
    """From an empty cache, the warm-up's second process compiles the QP while the first compiles the rest;
    the first one's SVM fits wait for it and load the QP from the cache (no miss), and the notice comes once."""
    p = subprocess.run([sys.executable, "-c", "from pyterrier_svmmap.cli.warm_up import warm_up; "
                        "warm_up(every_learner=False); "
                        "from pyterrier_svmmap.svm.qp import compiled; d = compiled().solve_dual; "
                        "print(sum(d._cache_hits.values()), sum(d._cache_misses.values()))"],
                       capture_output=True, text=True, timeout=1800, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "0"]
    assert p.stderr.count(COMPILE_MESSAGE) == 1, p.stderr


COLUMN_MAX = """
import sys, logging, numpy as np
seen = []
logging.getLogger("pyterrier_svmmap.compile").addFilter(lambda record: seen.append(record.getMessage()))
from pyterrier_svmmap import _jit
k = _jit.load("features._kernels")
out = np.zeros(2)
k.column_abs_max(np.array([[1.0, -3.0], [np.nan, 2.0]]), out)
assert out.tolist() == [1.0, 3.0]
print(len(seen), k.__file__)
"""


def run_from(folder: Path) -> tuple:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}   # numba caches beside the package
    p = subprocess.run([sys.executable, "-c", COLUMN_MAX], capture_output=True, text=True, timeout=600,
                       env=dict(env, PYTHONPATH=str(folder)), cwd=folder)
    assert p.returncode == 0, p.stderr
    notices, where = p.stdout.split()
    assert where.startswith(str(folder))
    return int(notices), sorted(x.name for x in (folder / "pyterrier_svmmap").rglob("*.nb[ic]"))


def test_kernels_cached_in_a_built_package_load_after_it_is_copied_with_new_mtimes(tmp_path):
    """The premise of compiling into the wheel: numba's cache beside a package (``__pycache__``), written where
    the package was built, is valid in a copy elsewhere whose files have new mtimes (as pip writes a wheel's):
    numba's index names a source by its content, not its path or mtime."""
    built, installed = tmp_path / "build" / "lib", tmp_path / "site-packages"
    shutil.copytree(ROOT / "pyterrier_svmmap", built / "pyterrier_svmmap",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert run_from(built)[0] == 1                              # compiled where it was built: the notice
    cache = run_from(built)[1]
    assert cache and run_from(built)[0] == 0                    # and loaded there
    shutil.copytree(built, installed, copy_function=shutil.copyfile)   # new files, new mtimes
    source = "pyterrier_svmmap/features/_kernels.py"
    assert os.stat(built / source).st_mtime_ns != os.stat(installed / source).st_mtime_ns
    assert run_from(installed) == (0, cache)                    # loaded, nothing compiled or added


def test_setup_removes_an_earlier_builds_kernels_and_compiles_none_when_told(tmp_path):
    """``setup.py build_py`` with ``PYTERRIER_SVMMAP_PRECOMPILE=0`` copies the package without kernels, and
    removes those an earlier build left in its folder."""
    pytest.importorskip("setuptools")
    lib = tmp_path / "lib"
    stale = lib / "pyterrier_svmmap" / "__pycache__" / "_jit.load-1.py311.nbi"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"")
    p = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)], cwd=ROOT,
                       capture_output=True, text=True, env=dict(os.environ, PYTERRIER_SVMMAP_PRECOMPILE="0"))
    assert p.returncode == 0, p.stderr
    assert (lib / "pyterrier_svmmap" / "_jit.py").read_bytes() == (ROOT / "pyterrier_svmmap" / "_jit.py").read_bytes()
    assert not list(lib.rglob("*.nb[ic]"))


@pytest.mark.parametrize("precompile, extra", [(None, ["numba>=0.58", "scipy>=1.10"]), ("0", []), ("1", [
    "numba>=0.58", "scipy>=1.10"])])
def test_a_wheels_build_requirements_include_numba_unless_told(monkeypatch, precompile, extra):
    pytest.importorskip("setuptools")
    import build_backend
    monkeypatch.setattr(build_backend, "_setuptools_wheel_requires", lambda config_settings=None: ["wheel"])
    if precompile is None:
        monkeypatch.delenv("PYTERRIER_SVMMAP_PRECOMPILE", raising=False)
    else:
        monkeypatch.setenv("PYTERRIER_SVMMAP_PRECOMPILE", precompile)
    assert build_backend.get_requires_for_build_wheel() == ["wheel", *extra]
    assert build_backend.get_requires_for_build_editable is not build_backend.get_requires_for_build_wheel


def test_depth_threshold_is_the_partitions_value():
    """The ``depth``-th highest score of a query (NaN as −inf), for sizes, depths and ties of every kind: the
    value ``np.partition`` puts at its position."""
    from pyterrier_svmmap.features._kernels import _depth_threshold
    rng = np.random.default_rng(3)
    for trial in range(400):
        m = int(rng.integers(1, 40))
        values = [rng.normal(size=m), np.round(rng.normal(size=m)), np.zeros(m) * rng.choice([-1.0, 1.0], m),
                  rng.integers(0, 3, m).astype(float)][trial % 4]
        values[rng.random(m) < 0.2] = np.nan
        values[rng.random(m) < 0.1] = -np.inf
        raw = np.stack([rng.normal(size=m), values], axis=1)
        depth = int(rng.integers(1, m + 2))
        got = _depth_threshold(raw, 0, m, 1, depth, np.empty(m))
        want = -np.inf if m < depth else np.partition(np.where(values == values, values, -np.inf), m - depth)[m - depth]
        assert got == want, (values, depth)


def test_kkt_solve_calls_lapack_as_np_linalg_does():
    """The QP's ``_kkt_solve`` calls numba's LAPACK entry points itself: the bits of ``np.linalg.solve`` then
    (a singular or inexact system) ``np.linalg.lstsq`` compiled by numba, and their errors."""
    from numba import njit
    from pyterrier_svmmap.svm._qp_kernels import _kkt_solve, _norm

    @njit
    def reference(K, r):
        n = r.shape[0]
        ok = True
        z = np.zeros(n)
        try:
            z = np.linalg.solve(K, r)
        except Exception:
            ok = False
        if ok and np.isfinite(z).all() and _norm(K @ z - r) <= 1e-10 * max(1.0, _norm(r)):
            return z
        return np.linalg.lstsq(K, r, rcond=2.220446049250313e-16 * n)[0]
    rng = np.random.default_rng(0)
    for trial in range(600):
        n = int(rng.integers(1, 12))
        B = rng.normal(size=(n, n if trial % 3 else max(1, n - 2)))       # every third singular
        d = rng.random(n) + 0.1
        K = np.round(B @ B.T, 1 if trial % 5 == 0 else 12) * d[:, None] * d[None, :]
        r = rng.normal(size=n)
        assert _kkt_solve(K, r).tobytes() == reference(K, r).tobytes(), (K, r)
    assert _kkt_solve(np.zeros((0, 0)), np.zeros(0)).shape == (0,)
    for K, r in ((np.array([[np.nan]]), np.ones(1)), (np.eye(2), np.array([1.0, np.inf]))):
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            reference(K, r)
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            _kkt_solve(K, r)
