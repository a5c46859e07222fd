"""Every bad input of the command line (bad_inputs.CASES): its exit status and one line on stderr, without a
traceback; the signal and permission cases in processes of their own; docs/cli.md's table of them."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyterrier_svmmap.cli import main

from tests.cli.bad_inputs import CASES, SEPARATE
from tests.data_paths import LETOR_TEST as TEST, LETOR_TRAIN as TRAIN

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("trained") / "model"
    assert main(["learn", "-c", "10", str(TRAIN), str(path)]) == 0
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, model, capsys, caplog):
    for name, text in case.files.items():
        if text is None:
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(text)
    if case.setup is not None:
        shutil.copytree(model, tmp_path / "model")
        case.setup(tmp_path / "model")
    where = dict(tmp=str(tmp_path), train=str(TRAIN), test=str(TEST), model=str(model))
    capsys.readouterr()
    try:
        code = main([a.format(**where) for a in case.argv])
    except SystemExit as e:                           # argparse's errors
        code = e.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if case.code == 0:                     # warnings are logged (in-process, pytest's handler takes them)
        err += caplog.text
    assert code == case.code, err
    assert "Traceback" not in err
    assert case.message in err and case.stderr.format(**where) in err, err
    if case.code == 2:
        assert len(lines) == 1 and lines[0].startswith(f"svmmap {case.argv[0]}: error: "), err


def _docs_table():
    """{case id: message} of docs/cli.md's bad-input table."""
    text = DOCS.read_text()
    table = text[text.index("<!-- bad inputs -->"):text.index("<!-- /bad inputs -->")]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].startswith("`") and cells[0] != "`case`":
            rows[cells[0].strip("`")] = (cells[2], cells[3])
    return rows


def test_the_docs_list_every_case_with_its_exit_status_and_message():
    docs = _docs_table()
    assert set(docs) == {c.id for c in CASES} | set(SEPARATE)
    for case in CASES:
        code, message = docs[case.id]
        assert code == str(case.code), case.id
        assert case.message.replace("|", "\\|") in message, case.id


# ------------------------------------------------------------------------------------------------
# cases that need a process of their own
# ------------------------------------------------------------------------------------------------
def _svmmap(*argv, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "pyterrier_svmmap.cli", *map(str, argv)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def test_interrupted(tmp_path, mq2008_fold1):
    """Ctrl-C during training: one line, exit status 130, no model and nothing partial; an existing model
    stays as it was."""
    old = tmp_path / "old"
    assert main(["learn", "-c", "10", str(TRAIN), str(old)]) == 0
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    for target in (tmp_path / "new" / "model", old):
        listing = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        proc = _svmmap("learn", "-v", "2", "-c", "0.001,0.01,0.1,1,10,100,1000", "--features", "auto", "--n-bins", "20",
                       mq2008_fold1 / "train.txt", target)
        started = time.monotonic()
        seen = ""
        while "cutting_plane: iteration" not in seen and time.monotonic() - started < 300:   # training
            line = proc.stderr.readline()
            assert line, f"svmmap learn ended before training: {seen}"
            seen += line
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=120)[1]
        assert proc.returncode == 130, rest
        # the compile notice of a cold numba cache may come at any point of the training
        last = [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith(("DEBUG ", "INFO "))
                and not ln.startswith("WARNING pyterrier_svmmap.compile:")]
        assert last == [f"svmmap learn: interrupted; no model written; {target} is as it was"], rest
        assert "Traceback" not in seen + rest
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == listing   # nothing new, nothing partial
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before


#: runs the command line as the user 'nobody' when started as root (who may write anywhere), after importing
#: what ``svmmap learn`` imports before its checks (the interpreter's own files may be out of nobody's reach)
AS_USER = """
import os, sys
import gettext, locale                        # argparse's messages load them on first use
from pyterrier_svmmap.cli import main
import pyterrier_svmmap.cli.learn, pyterrier_svmmap.io.atomic, pyterrier_svmmap.io.model_files
import pyterrier_svmmap.io.svmlight, pyterrier_svmmap.svm.ranker
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_model_folder_not_writable():
    """MODEL in a folder this user cannot write: refused at once, before the training file is read (its bad
    line is not reported), and nothing is left in the folder."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:               # not pytest's folder: 'nobody' must reach it
        os.chmod(tmp, 0o755)
        folder = Path(tmp) / "ro"
        folder.mkdir(mode=0o555)
        folder.chmod(0o555)
        bad = Path(tmp) / "bad.txt"
        bad.write_text("1 qid:1 1:zz\n")
        bad.chmod(0o644)
        repo = Path(__file__).resolve().parents[2]
        proc = subprocess.run([sys.executable, "-c", AS_USER, "learn", str(bad), str(folder / "m")],
                              capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(repo)))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [
            f"svmmap learn: error: cannot write MODEL {folder / 'm'}: cannot create files in {folder} (Permission "
            "denied); give a path in a folder you can write to"]
        assert list(folder.iterdir()) == []
        folder.chmod(0o755)


def test_separate_cases_are_tests_here():
    for name in SEPARATE:
        assert callable(globals()[f"test_{name.replace('-', '_')}"]), name
