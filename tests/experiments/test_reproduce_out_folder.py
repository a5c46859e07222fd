"""``svmmap reproduce``'s output folder (pyterrier_svmmap.experiments.reproduce.base_runs.folder_lock): two
runs into one folder — the second is refused with the holder's pid, and the folder is freed after; a run
that fails before writing creates no folder."""
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_svmmap.cli import main


def _hold_lock(folder, ready, release):
    from pyterrier_svmmap.experiments.reproduce.base_runs import folder_lock
    with folder_lock(Path(folder)):
        ready.set()
        release.wait(30)


def test_a_folder_in_use_is_refused_with_the_holders_pid_and_freed_after(tmp_path):
    from pyterrier_svmmap.experiments.reproduce.base_runs import FolderInUse, folder_lock
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(tmp_path), ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(FolderInUse, match=rf"in use by another svmmap reproduce \(pid {holder.pid}\)"):
            with folder_lock(tmp_path):
                pass
    finally:
        release.set()
        holder.join(30)
    with folder_lock(tmp_path):                     # released when the holder ends
        pass


def test_reproduce_into_a_folder_in_use_exits_2_with_one_line(tmp_path):
    from pyterrier_svmmap.experiments.reproduce.base_runs import folder_lock
    from tests.helpers import _write_collection
    out = tmp_path / "out"
    collection = _write_collection(tmp_path / "collection", n_docs=60, n_topics=8)
    with folder_lock(out):
        proc = subprocess.run([sys.executable, "-c", "import sys; from pyterrier_svmmap.cli import main; "
                               "sys.exit(main(sys.argv[1:]))", "reproduce", "--collection", str(collection),
                               "--train", "3", "--valid", "2",
                               "--out", str(out), "--trials", "1", "--systems", "svm-map"],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (f"svmmap reproduce: error: {out} is in use by another svmmap "
                                                    f"reproduce (pid {__import__('os').getpid()}); wait for it "
                                                    "to finish, or give another --out")


def test_a_reproduce_that_fails_before_writing_creates_no_folder(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "--collection", str(tmp_path / "no-such-collection"), "--out", str(out)]) == 2
    assert "no-such-collection" in capsys.readouterr().err and not out.exists()
