"""StructSVMRanker trains from float32/float64 arrays and memory maps, read in blocks of whole queries, the model
of the in-memory float64 fit: the same coef_ and thresholds, bit for bit, whatever the block size (down to one
query per block), the queries that are skipped, the shards of the sums or the selection by cross-validation."""
import numpy as np
import pytest

import pyterrier_svmmap.chunks as chunks
import pyterrier_svmmap.features.thresholds as thresholds
from pyterrier_svmmap.queries import check_ranking_arrays
from pyterrier_svmmap.svm.ranker import StructSVMRanker


def queries(seed=0, n_queries=24, n_funcs=4):
    """Float32-exact scores (NaN, ties), 10 % relevant, one query without a relevant candidate."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, size=n_queries)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    labels = (rng.random(offsets[-1]) < 0.15).astype(float)
    labels[offsets[0]:offsets[1]] = 0.0
    labels[offsets[1]] = 1.0
    raw = (rng.standard_normal((offsets[-1], n_funcs)) + labels[:, None] * [0.2, 0.6, 0.0, 1.0]).astype(np.float32)
    raw[:, 2] = np.round(raw[:, 2])
    raw[rng.random(raw.shape) < 0.1] = np.nan
    return raw, labels, offsets


def inputs(raw32, tmp_path):
    out = {"float32": raw32}
    for dtype in (np.float32, np.float64):
        path = tmp_path / f"{np.dtype(dtype).name}.npy"
        mm = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=raw32.shape)
        mm[:] = raw32
        mm.flush()
        out[f"memmap-{np.dtype(dtype).name}"] = np.load(path, mmap_mode="r")
    return out


CASES = [dict(features="bins", C=1.0, n_bins=10),
         dict(features="bins", C=1.0, n_bins=10, threshold_depth=None, queries_per_shard=5),
         dict(features="bins+raw", C=0.5, n_bins=6, prior="best"),
         dict(features="raw", C=[0.1, 1.0], cv=2)]


@pytest.mark.parametrize("params", CASES, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_memory_mapped_and_chunked_training_gives_the_in_memory_model(tmp_path, monkeypatch, params):
    raw, labels, offsets = queries()
    reference = StructSVMRanker(n_jobs=1, **params).fit(raw.astype(np.float64), labels, offsets)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1)                   # a chunk per query
    monkeypatch.setattr(thresholds, "SAMPLE_BYTES", 1)                 # a pass per function
    for name, data in inputs(raw, tmp_path).items():
        model = StructSVMRanker(n_jobs=2, **params).fit(data, labels, offsets)
        np.testing.assert_array_equal(model.coef_, reference.coef_, err_msg=name)
        assert model.C_ == reference.C_
        assert model.tie_function_ == reference.tie_function_
        th, th_ref = model.layout_.encoder.thresholds_, reference.layout_.encoder.thresholds_
        assert (th is None) == (th_ref is None)
        if th_ref is not None:
            np.testing.assert_array_equal(th, th_ref, err_msg=name)
        np.testing.assert_array_equal(model.ranking_scores(data, offsets),
                                      reference.ranking_scores(raw.astype(np.float64), offsets), err_msg=name)


def test_a_memory_map_is_checked_in_place_not_copied(tmp_path):
    raw, labels, offsets = queries(1)
    mm = inputs(raw, tmp_path)["memmap-float32"]
    checked = check_ranking_arrays(mm, labels, offsets)[0]
    assert checked is mm
    bad = np.array(raw)
    bad[offsets[5] + 2, 3] = np.inf
    with pytest.raises(ValueError, match=f"base function 3 is infinite for candidate {offsets[5] + 2}"):
        check_ranking_arrays(bad, labels, offsets)
