"""What the benchmarks share: synthetic data, timing in interleaved rounds, peak memory, child processes, the
✓/✗ target lines and the command line of every ``bench_<subject>.py`` (``--quick``, ``--only``)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO, REPO / "tests"):                     # the package, and the tests' numpy references (oracles)
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
DATA = REPO.parent / "shared" / "data"
MQ2008 = DATA / "letor" / "MQ2008"
#: ``python -c CLI args…`` is ``svmmap args…`` from this working tree (with :data:`ENV`)
CLI = "import sys; from pyterrier_svmmap.cli import main; sys.exit(main(sys.argv[1:]))"
ENV = dict(os.environ, PYTHONPATH=str(REPO))
TARGETS = []


def synthetic(n, n_funcs=16, per_query=1000, seed=0, rel_rate=0.05):
    """(raw, labels, offsets): ``n`` candidates, 5 % relevant, ``n_funcs`` noisy base functions of the hidden
    relevance, 10 % of the scores missing (NaN, not retrieved)."""
    rng = np.random.default_rng(seed)
    n_q = max(1, n // per_query)
    n = n_q * per_query
    labels = (rng.random(n) < rel_rate).astype(np.int8)
    raw = np.empty((n, n_funcs))
    for f in range(n_funcs):
        col = rng.standard_normal(n) + (0.3 + 0.1 * (f % 4)) * labels
        col[rng.random(n) < 0.1] = np.nan
        raw[:, f] = col
    return raw, labels, np.arange(n_q + 1, dtype=np.int64) * per_query


def rounds(fns: dict, repeat: int) -> dict:
    """name → seconds of each of ``repeat`` rounds: every function once (warm-up), then once per round in turn,
    so that a reference and its candidate share the machine's load."""
    for f in fns.values():
        f()
    out = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return out


def repeat(args, quick=2, full=5) -> int:
    """``--repeat``, else ``quick`` rounds with ``--quick`` and ``full`` without."""
    return args.repeat or (quick if args.quick else full)


def quiet(f, *a, **k):
    """``f(*a, **k)`` with its warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


def timed(f, *a, **k):
    """(``f(*a, **k)``, the seconds it took)."""
    t = time.perf_counter()
    out = f(*a, **k)
    return out, time.perf_counter() - t


def runs(seconds) -> str:
    """'median s (runs …)'."""
    return f"{np.median(seconds):.3f} s (runs {' '.join(f'{s:.3f}' for s in seconds)})"


def peak_rss_gb() -> float:
    """This process's peak resident set (VmHWM), GB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024 ** 2


def load() -> str:
    return f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def target(text: str, ok: bool) -> bool:
    """Print a target's line with ✓/✗ and keep it for the summary at the end."""
    TARGETS.append(f"{mark(ok)} {text}")
    print(f"target: {TARGETS[-1]}", flush=True)
    return ok


def mq2008_folds(folds=(1,)):
    """{K: Fold} of LETOR MQ2008 (``../shared/data/letor/MQ2008``), read as ``svmmap letor`` reads them."""
    from pyterrier_svmmap.experiments.letor import discover_folds, load_folds
    return load_folds(discover_folds(MQ2008, list(folds)))


def child(script: str, *args, env=None, echo=False):
    """Run ``script --child args…`` in a new process; the dict it printed last (``RESULT {…}``), or None after
    printing why it failed. ``echo``: print its stderr (its log) too."""
    p = subprocess.run([sys.executable, script, "--child", *map(str, args)], capture_output=True, text=True,
                       env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if echo and not p.returncode:
        print("".join(f"  {line}\n" for line in p.stderr.splitlines()), end="")
    if p.returncode or not lines:
        print(f"  {' '.join(map(str, args))}: failed: {p.stderr.strip()[-600:] or p.returncode}", flush=True)
        return None
    return json.loads(lines[-1][len("RESULT "):])


def write_svmlight(path, n, per_query=1000, n_funcs=16, first_qid=1, block_queries=1000):
    """An svmlight file of ``n`` fixed-width lines (``n / per_query`` queries, 5 % relevant, features
    ``0.dddd`` of the synthetic model), built as byte arrays: ten different blocks of ``block_queries`` queries
    repeated, each with its own qids (Python formatting of 10⁸ lines would take hours)."""
    n_q = max(1, n // per_query)
    head, blocks = b"0 qid:000000000", []
    for seed in range(min(10, -(-n_q // block_queries))):
        rng = np.random.default_rng(seed)
        m = min(block_queries, n_q) * per_query
        labels = rng.random(m) < 0.05
        scores = rng.standard_normal((m, n_funcs)) + (0.3 + 0.1 * (np.arange(n_funcs) % 4)) * labels[:, None]
        digits = np.clip(np.round((scores + 4.0) / 8.0 * 9999), 0, 9999).astype(np.int64)
        lines = np.tile(np.frombuffer(head + b"".join(b" %d:0.0000" % (j + 1) for j in range(n_funcs)) + b"\n",
                                      np.uint8), (m, 1))
        lines[:, 0] = 48 + labels
        pos = len(head)
        for j in range(n_funcs):
            pos += len(b" %d:0." % (j + 1))
            for k in range(4):
                lines[:, pos + 3 - k] = 48 + (digits[:, j] // 10 ** k) % 10
            pos += 4
        blocks.append(lines)
    with open(path, "wb") as f:
        for b, q0 in enumerate(range(0, n_q, block_queries)):
            k = min(block_queries, n_q - q0)
            rows = blocks[b % len(blocks)][:k * per_query]
            qid = first_qid + np.repeat(np.arange(q0, q0 + k), per_query)
            for d in range(9):
                rows[:, len(head) - 1 - d] = 48 + (qid // 10 ** d) % 10
            f.write(rows.tobytes())


def main(doc: str, sections: dict, children: dict = None, options=(), repeat: str = None):
    """The command line of a benchmark: ``--quick``, ``--only`` (names of ``sections``, each a function of the
    parsed arguments whose docstring's first line is its title), ``--repeat N`` when ``repeat`` (its help) is
    given, ``options`` ((flags, keywords) of ``add_argument``); every section in turn, then the targets' summary.
    ``--child NAME ARGS`` (internal) runs ``children[NAME](*ARGS)`` and prints its dict as ``RESULT {…}``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes and few rounds: a smoke run of a few minutes")
    ap.add_argument("--only", default=",".join(sections), help=f"sections to run (default all: {','.join(sections)})")
    if repeat:
        ap.add_argument("--repeat", type=int, default=None, help=repeat)
    for flags, kw in options:
        ap.add_argument(*flags, **kw)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(children[args.child[0]](*args.child[1:])), flush=True)
        return
    only = args.only.split(",")
    unknown = [s for s in only if s not in sections]
    if unknown:
        ap.error(f"unknown section {unknown[0]!r}; choose from {', '.join(sections)}")
    print(f"{Path(sys.argv[0]).name}{' --quick' if args.quick else ''}: numpy {np.__version__}, {load()}", flush=True)
    t0 = time.perf_counter()
    for name in only:
        print(f"\n=== {name}: {sections[name].__doc__.splitlines()[0]} ===", flush=True)
        sections[name](args)
    print(f"\n{time.perf_counter() - t0:.0f} s in all; {load()}\ntargets:")
    for line in TARGETS or ["(none judged)"]:
        print(f"  {line}")
