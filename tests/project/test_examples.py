"""examples/vaswani_svmmap.py as a user runs it: one readable table on stdout, no PISA progress, and its
temporary folder gone afterwards."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_vaswani_example_prints_a_whole_table_quietly_and_cleans_up(tmp_path, vaswani_dir, examples_dir):
    pytest.importorskip("pyterrier_pisa")
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run([sys.executable, "vaswani_svmmap.py", str(vaswani_dir)], cwd=examples_dir, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 4 and lines[0].split()[:4] == ["name", "map", "recip_rank", "ndcg_cut_10"], proc.stdout
    assert [ln.split()[0] for ln in lines[1:]] == ["BM25", "DPH", "SVM-map"]
    assert "..." not in proc.stdout and "rows x" not in proc.stdout
    assert all(len(cell.split(".")[-1]) <= 4 for cell in lines[1].split()[1:4])      # rounded to 4 digits
    assert "Storing" not in proc.stderr and "[info]" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []                                             # the index is gone
