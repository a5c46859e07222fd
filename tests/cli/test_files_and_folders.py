"""``svmmap learn`` and ``classify`` at a user's edges: a malformed first label, a byte order mark, a
LightGBM group file, a directory that holds no model, an output folder to create, how C was chosen,
``python -m``. Each ends in the right output or one line naming the file and line."""
import subprocess
import sys
from pathlib import Path

import numpy as np

from pyterrier_svmmap.cli import main

from tests.data_paths import EXAMPLES


def _letor_lines():
    return [ln for ln in (EXAMPLES / "letor_train.txt").read_text().splitlines() if ln and not ln.startswith("#")]


def test_a_malformed_first_label_is_reported_as_file_line(tmp_path, capsys):
    lines = _letor_lines()
    bad = tmp_path / "train.txt"
    bad.write_text("\n".join(["O" + lines[0][1:]] + lines[1:]) + "\n")
    assert main(["learn", str(bad), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{bad}:1: expected a numeric label first, found 'O'")
    assert len(err.splitlines()) == 1


def test_a_byte_order_mark_is_read_as_if_absent(tmp_path):
    lines = _letor_lines()
    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    plain.write_text("\n".join(lines) + "\n")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    for f in (plain, bom):
        assert main(["learn", str(f), str(tmp_path / f"m_{f.stem}"), "-c", "1"]) == 0
        assert main(["classify", str(f), str(tmp_path / f"m_{f.stem}"), str(tmp_path / f"{f.stem}.pred")]) == 0
    assert (tmp_path / "plain.pred").read_text() == (tmp_path / "bom.pred").read_text()


def test_an_index_file_with_a_byte_order_mark_lists_its_files(tmp_path):
    lines = _letor_lines()
    (tmp_path / "a.txt").write_text("\n".join(lines[:48]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[48:]) + "\n")
    (tmp_path / "index.txt").write_bytes(b"\xef\xbb\xbfa.txt\nb.txt\n")
    assert main(["learn", str(tmp_path / "index.txt"), str(tmp_path / "m_index"), "-c", "1"]) == 0
    assert main(["learn", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), str(tmp_path / "m_files"), "-c", "1"]) == 0
    weights = [np.load(tmp_path / m / "weights.npz")["coef"] for m in ("m_index", "m_files")]
    np.testing.assert_array_equal(*weights)              # the same two shards, in the same order


def test_lightgbm_group_files_get_a_hint(tmp_path, capsys):
    lines = [" ".join(t for t in ln.split() if not t.startswith("qid:")) for ln in _letor_lines()]
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    (tmp_path / "train.txt.query").write_text("48\n48\n")
    assert main(["learn", str(data), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"{data}:1: expected 'qid:<integer>'" in err
    assert "train.txt.query looks like a LightGBM-style group file" in err


def test_learn_refuses_a_directory_that_holds_no_model_unless_forced(tmp_path, capsys):
    train = str(EXAMPLES / "letor_train.txt")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["learn", train, str(other)]) == 2
    assert "holds other files but no model" in capsys.readouterr().err
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]
    assert main(["learn", train, str(other), "--force"]) == 0
    assert (other / "model.json").is_file() and (other / "keep.txt").read_text() == "mine"
    assert main(["learn", train, str(other), "-c", "10"]) == 0          # a model directory is replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["learn", train, str(empty)]) == 0


def test_classify_creates_the_output_folder(tmp_path):
    train, test = str(EXAMPLES / "letor_train.txt"), str(EXAMPLES / "letor_test.txt")
    assert main(["learn", train, str(tmp_path / "m")]) == 0
    out = tmp_path / "new" / "deeper" / "pred.txt"
    assert main(["classify", test, str(tmp_path / "m"), str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(_letor_lines_of(test))


def _letor_lines_of(path):
    return [ln for ln in Path(path).read_text().splitlines() if ln.split("#")[0].strip()]


def test_learn_says_how_c_was_chosen_and_not_when_nothing_was_compared(tmp_path, caplog):
    train, test = str(EXAMPLES / "letor_train.txt"), str(EXAMPLES / "letor_test.txt")
    with caplog.at_level("INFO", logger="pyterrier_svmmap"):
        assert main(["learn", train, str(tmp_path / "one"), "-c", "10"]) == 0
    single = [r.message for r in caplog.records if "model written" in r.message][-1]
    assert single.startswith("C=10;") and "chosen" not in single and "none" not in single
    caplog.clear()
    with caplog.at_level("INFO", logger="pyterrier_svmmap"):
        assert main(["learn", train, str(tmp_path / "grid"), "-c", "0.1,10", "--valid", test]) == 0
    assert "chosen on --valid" in [r.message for r in caplog.records if "model written" in r.message][-1]


def test_python_dash_m_runs_the_command_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pyterrier_svmmap.cli", "learn", str(tmp_path / "missing.txt"),
                           str(tmp_path / "m")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"svmmap learn: error: {tmp_path / 'missing.txt'} not found"]
