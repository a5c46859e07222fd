"""Every target of the scale issue (#31) in one run: the benchmarks that measure them, one after the other
on an otherwise idle machine, and their ✓/✗ lines gathered at the end.

Usage::

    python benchmarks/bench_scale.py [--quick] [--skip LETTERS]

Runs, each in its own process (its output shown as it comes):

c. ``bench.py --parts c``: encoding ÷ fit at 10⁷ candidates (target ≤ 1);
m. ``bench.py --parts m``: 10⁷ and 10⁸ candidates from a float32 memory map: peak RSS (≤ 8 GB) and total
   time 10⁸ ÷ 10⁷ (≤ 12);
s. ``bench.py --parts s``: ``svmmap learn`` on a generated 10⁸-line svmlight file: peak RSS (≤ 8 GB);
d. ``bench_dask.py --targets``: the default on a 2-worker LocalCluster equals one process (relative ≤ 1e-8),
   and the overhead case on a plain user LocalCluster ÷ one process (≤ 1.5);
k. ``bench_coldstart.py``: a fresh environment's first fit ÷ a warm one (≤ 3), and the compile notice;
w. ``bench_speed.py --parts c``: the MQ2008 5-fold command-line workflow ÷ svm_rank's (≤ 0.3).

About 70 minutes on 2 cores (``--quick``: 10⁶/10⁷ sizes, a few minutes). ``--skip mk`` leaves parts out.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: letter → (what it measures, the command's arguments after the interpreter)
PARTS = {
    "c": ("encoding ÷ fit at 10⁷", ["bench.py", "--parts", "c"]),
    "m": ("10⁸ from a memory map", ["bench.py", "--parts", "m"]),
    "s": ("svmmap learn on a 10⁸-line svmlight file", ["bench.py", "--parts", "s"]),
    "d": ("the default on Dask", ["bench_dask.py", "--targets"]),
    "k": ("cold start", ["bench_coldstart.py", "--repeat", "3", "--skip-empty-cache"]),
    "w": ("the MQ2008 command-line workflow", ["bench_speed.py", "--parts", "c", "--repeat", "3"]),
}


def run(letter: str, quick: bool) -> list:
    """Run part ``letter``, echoing its output; its lines that judge a target (✓/✗)."""
    title, argv = PARTS[letter]
    argv = [sys.executable, str(HERE / argv[0]), *argv[1:]]
    if quick and letter in "cmsd":
        argv.append("--quick")
    print(f"\n##### {letter}. {title}: {' '.join(argv[1:])}", flush=True)
    t = time.perf_counter()
    judged = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as p:
        for line in p.stdout:
            print(line, end="", flush=True)
            if "✓" in line or "✗" in line:
                judged.append(line.strip())
    if p.returncode:
        judged.append(f"failed with exit status {p.returncode} ✗")
    print(f"##### {letter}. {time.perf_counter() - t:.0f}s", flush=True)
    return judged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the smaller sizes of each part (a smoke run)")
    ap.add_argument("--skip", default="", help="letters of the parts to leave out")
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average at the start: {f.read().split()[:3]}")
    t = time.perf_counter()
    results = {letter: run(letter, args.quick) for letter in PARTS if letter not in args.skip}
    print(f"\n===== targets ({time.perf_counter() - t:.0f}s in all) =====")
    for letter, judged in results.items():
        print(f"{letter}. {PARTS[letter][0]}")
        for line in judged or ["(no target line printed)"]:
            print(f"   {line}")


if __name__ == "__main__":
    main()
