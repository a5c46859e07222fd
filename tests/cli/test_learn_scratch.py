"""``svmmap learn`` trains from memory maps (``--scratch DIR``, or on its own when the data would take more than
half the available memory) and writes the model it writes from memory, bit for bit; the maps' folder is
removed after training, also after an error."""
from __future__ import annotations

import json
import logging

import numpy as np

from pyterrier_svmmap import cli
from pyterrier_svmmap.io import svmlight


def model_files(folder):
    """The model's arrays and its JSON without the timings."""
    doc = json.loads((folder / "model.json").read_text())

    def drop_seconds(x):
        if isinstance(x, dict):
            return {k: drop_seconds(v) for k, v in x.items() if k != "seconds"}
        if isinstance(x, list):
            return [drop_seconds(v) for v in x]
        return x
    with np.load(folder / "weights.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return drop_seconds(doc), arrays


def assert_same_model(a, b):
    (doc_a, arr_a), (doc_b, arr_b) = model_files(a), model_files(b)
    assert doc_a == doc_b
    assert arr_a.keys() == arr_b.keys() and all(np.array_equal(arr_a[k], arr_b[k]) for k in arr_a)


def shuffled_copy(src, dst, seed=0):
    lines = src.read_text().splitlines(True)
    dst.write_text("".join(lines[i] for i in np.random.default_rng(seed).permutation(len(lines))))
    return dst


def test_scratch_gives_the_in_memory_model(tmp_path, letor_example_files):
    train = shuffled_copy(letor_example_files.train, tmp_path / "train.txt")    # regrouped in the map
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for argv in (["-c", "0.1,1,10", "--bins", "20", "--valid", str(letor_example_files.test)],
                 ["-c", "1", "--features", "bins+raw"]):
        name = "-".join(argv[:2]).replace(",", "_")
        assert cli.main(["learn", "-v", "0", *argv, str(train), str(tmp_path / f"mem{name}")]) == 0
        assert cli.main(["learn", "-v", "0", *argv, "--scratch", str(scratch), str(train),
                         str(tmp_path / f"map{name}")]) == 0
        assert_same_model(tmp_path / f"mem{name}", tmp_path / f"map{name}")
        assert list(scratch.iterdir()) == []


def test_data_larger_than_half_the_memory_are_mapped_on_their_own(tmp_path, letor_example_files, monkeypatch,
                                                                  caplog):
    assert cli.main(["learn", "-v", "0", "-c", "1", str(letor_example_files.train), str(tmp_path / "mem")]) == 0
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    needed = svmlight.estimated_read_bytes([letor_example_files.train])
    monkeypatch.setattr(svmlight, "available_memory", lambda: 2 * needed - 1)
    with caplog.at_level(logging.INFO, logger="pyterrier_svmmap.cli.learn"):
        assert cli.main(["learn", "-c", "1", str(letor_example_files.train), str(tmp_path / "map")]) == 0
    assert any("reading it into memory maps in " + str(tmp_path / "tmp") in r.getMessage() for r in caplog.records)
    assert_same_model(tmp_path / "mem", tmp_path / "map")
    assert list((tmp_path / "tmp").iterdir()) == []
    caplog.clear()
    monkeypatch.setattr(svmlight, "available_memory", lambda: 2 * needed)         # fits: read into memory
    with caplog.at_level(logging.INFO, logger="pyterrier_svmmap.cli.learn"):
        assert cli.main(["learn", "-c", "1", str(letor_example_files.train), str(tmp_path / "mem2")]) == 0
    assert not any("memory maps" in r.getMessage() for r in caplog.records)


def test_the_estimate_is_about_the_in_memory_read(letor_example_files):
    """The estimate from the first bytes of each file is within a factor of 2 of the dense matrix and pairs."""
    data = svmlight.read_svmlight(letor_example_files.train)
    pairs = int(np.count_nonzero(data.features))
    exact = 8 * data.features.size + 32 * pairs + 250 * data.n_lines
    estimate = svmlight.estimated_read_bytes([letor_example_files.train], sample_bytes=2000)
    assert exact / 2 < estimate < 2 * exact


def test_scratch_is_removed_after_an_error(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\n0 qid:1 1:zz\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert cli.main(["learn", "--scratch", str(scratch), str(bad), str(tmp_path / "m")]) == 2
    assert f"{bad}:2: expected 'index:value' pairs" in capsys.readouterr().err
    assert list(scratch.iterdir()) == [] and not (tmp_path / "m").exists()


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path, letor_example_files, monkeypatch, capsys):
    import errno
    from pyterrier_svmmap.io import svmlight_mapped

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(svmlight_mapped, "read_svmlight_mapped", full)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert cli.main(["learn", "--scratch", str(scratch), str(letor_example_files.train), str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"svmmap learn: error: no space left in {scratch} for the memory maps of TRAIN (8 bytes a line and "
                   "feature): give --scratch DIR on a disk with room"]
    assert list(scratch.iterdir()) == []
