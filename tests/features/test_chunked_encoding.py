"""Encoding in chunks of whole queries (:mod:`pyterrier_svmmap.chunks`) gives what the whole matrix gives.

The encoder reads float32 and float64 arrays and memory maps chunk by chunk; its thresholds come from samples
gathered a group of functions at a time. Cutting the chunks at every query boundary (``CHUNK_BYTES`` of one
byte) and the samples at every function (``SAMPLE_BYTES`` of one byte) must change nothing: the same thresholds
(those of ``np.quantile(method="lower")`` of every retrieved score, or of each query's top ``depth``), scales
and φ, bit for bit.
"""
import numpy as np
import pytest

import pyterrier_svmmap.chunks as chunks
import pyterrier_svmmap.features.thresholds as thresholds
from pyterrier_svmmap.features.encoder import FeatureEncoder
from pyterrier_svmmap.features.scales import column_top
from pyterrier_svmmap.features.thresholds import sample_thresholds


def scores(seed=0, n_funcs=5):
    """Float32-exact scores of queries of 0, 1, 2 … 40 candidates, with NaN, ties and a constant column."""
    rng = np.random.default_rng(seed)
    sizes = np.r_[0, 1, 2, rng.integers(3, 40, size=12), 7]
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    raw = rng.standard_normal((offsets[-1], n_funcs)).astype(np.float32)
    raw[:, 1] = np.round(raw[:, 1] * 2)                     # many ties
    raw[:, 2] *= np.float32(1e6)
    raw[:, 3] = 4.0                                         # constant within every query
    raw[rng.random(raw.shape) < 0.15] = np.nan
    return raw, offsets


def as_inputs(raw32, tmp_path):
    """The same scores as a float64 array, a float32 array, and float32 and float64 memory maps."""
    out = {"float64": raw32.astype(np.float64), "float32": raw32}
    for dtype in (np.float32, np.float64):
        mm = np.lib.format.open_memmap(tmp_path / f"{np.dtype(dtype).name}.npy", mode="w+", dtype=dtype,
                                       shape=raw32.shape)
        mm[:] = raw32
        mm.flush()
        out[f"memmap-{np.dtype(dtype).name}"] = np.load(tmp_path / f"{np.dtype(dtype).name}.npy", mmap_mode="r")
    return out


def lower_quantile_reference(raw, offsets, n_bins, depth):
    """The thresholds' definition: −inf, then the distinct quantiles k/n_bins (method "lower") of each function's
    retrieved scores (or of each query's ``depth`` highest, ties at the boundary kept), then +inf."""
    raw = np.asarray(raw, dtype=float)
    out = []
    for f in range(raw.shape[1]):
        kept = []
        for q in range(len(offsets) - 1):
            col = raw[offsets[q]:offsets[q + 1], f]
            col = col[~np.isnan(col)]
            if depth is not None and len(offsets) > 1 and np.diff(offsets).max() > depth \
                    and offsets[q + 1] - offsets[q] >= depth:
                col = col[col >= np.sort(np.where(np.isnan(raw[offsets[q]:offsets[q + 1], f]), -np.inf,
                                                  raw[offsets[q]:offsets[q + 1], f]))[-depth]]
            kept.append(col)
        values = np.concatenate(kept)
        qs = np.quantile(values, np.arange(1, n_bins) / n_bins, method="lower") if len(values) else np.zeros(0)
        out.append(thresholds.pad_thresholds(qs, n_bins))
    return np.stack(out)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of one query, samples of one function per pass."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1)
    monkeypatch.setattr(thresholds, "SAMPLE_BYTES", 1)


def test_blocks_are_whole_queries_at_every_boundary(monkeypatch):
    raw, offsets = scores()
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1)
    blocks = list(chunks.query_chunks(raw, offsets))
    assert [int((np.diff(b.offsets) > 0).sum()) for b in blocks] == [1] * int((np.diff(offsets) > 0).sum())
    assert [b.first for b in blocks] == sorted(b.first for b in blocks) and blocks[0].first == 0
    rebuilt = np.concatenate([[0]] + [b.start + b.offsets[1:] for b in blocks])
    np.testing.assert_array_equal(rebuilt, offsets)
    assert all(b.values.dtype == np.float64 and b.values.flags.c_contiguous for b in blocks)
    np.testing.assert_array_equal(np.vstack([b.values for b in blocks]), raw.astype(float))


@pytest.mark.parametrize("depth", [None, 1, 3, 10])
@pytest.mark.parametrize("n_bins", [1, 2, 7, 50])
def test_sampled_thresholds_are_the_lower_quantiles(tiny_blocks, depth, n_bins):
    raw, offsets = scores()
    expected = lower_quantile_reference(raw, offsets, n_bins, depth)
    for data in (raw, raw.astype(float)):
        np.testing.assert_array_equal(sample_thresholds(data, offsets, n_bins, depth), expected)


@pytest.mark.parametrize("features,binning,depth", [("bins", "quantile", None), ("bins", "quantile", 3),
                                                     ("bins+raw+minmax", "quantile", None), ("bins", "minmax", None),
                                                     ("bins+raw", "percentile", 5)])
def test_every_input_and_block_size_encodes_alike(tmp_path, monkeypatch, features, binning, depth):
    raw, offsets = scores(1)
    reference = FeatureEncoder(features, 9, binning, depth).fit(raw.astype(float), offsets)
    X_ref = reference.transform(raw.astype(float), offsets)
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1)
    monkeypatch.setattr(thresholds, "SAMPLE_BYTES", 1)
    for name, data in as_inputs(raw, tmp_path).items():
        enc = FeatureEncoder(features, 9, binning, depth).fit(data, offsets)
        for attr in ("thresholds_", "prescale_", "column_scale_", "indicator_scale_"):
            got, want = getattr(enc, attr), getattr(reference, attr)
            assert (got is None) == (want is None), (name, attr)
            if want is not None:
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {attr}")
        X = enc.transform(data, offsets)
        for b, b_ref in zip(X.blocks, X_ref.blocks):
            got = b.codes if hasattr(b, "codes") else b.values
            want = b_ref.codes if hasattr(b_ref, "codes") else b_ref.values
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_codes_of_a_bins_block_follow_their_definition(tiny_blocks):
    raw, offsets = scores(2)
    enc = FeatureEncoder("bins", 6).fit(raw, offsets)
    codes = enc.transform(raw, offsets).blocks[0].codes
    th = enc.thresholds_
    expected = np.where(np.isnan(raw), 0, (th[None, :, :] < raw.astype(float)[:, :, None]).sum(axis=2))
    np.testing.assert_array_equal(codes, expected)


def test_column_top_reads_blocks(tiny_blocks):
    raw, offsets = scores(3)
    expected = np.nan_to_num(np.nanmax(np.abs(raw.astype(float)), axis=0), nan=0.0)
    np.testing.assert_array_equal(column_top(raw, offsets), expected)
    np.testing.assert_array_equal(column_top(raw), expected)


def test_query_rows_read_only_the_selected_queries(tmp_path, monkeypatch):
    raw, offsets = scores(4)
    mm = as_inputs(raw, tmp_path)["memmap-float32"]
    keep = np.arange(len(offsets) - 1) % 3 != 1
    rows = chunks.select_queries(mm, offsets, keep)
    assert isinstance(rows, chunks.QueryRows)
    expected = raw.astype(float)[np.repeat(keep, np.diff(offsets))]
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 1)
    np.testing.assert_array_equal(np.asarray(rows), expected)
    np.testing.assert_array_equal(rows[:, 2], expected[:, 2])
    enc = FeatureEncoder("bins+raw", 5).fit(rows, rows.offsets)
    ref = FeatureEncoder("bins+raw", 5).fit(expected, rows.offsets)
    np.testing.assert_array_equal(enc.thresholds_, ref.thresholds_)
    np.testing.assert_array_equal(enc.column_scale_, ref.column_scale_)
