"""The on-disk model format (one directory), shared by ``StructSVM.save/load``, the CLI and ``pt.Artifact``.

A model directory holds:

``model.json``
    metadata: ``format`` ("pyterrier-svmmap"), ``format_version`` (:data:`FORMAT_VERSION`),
    ``package_version``, ``estimator`` (class name), ``params`` (loss, loss_params, C — the one kept —,
    epsilon, max_iter, features, n_bins, binning), ``base_names`` (one per base function),
    ``n_functions`` (feature count the model expects), ``dim`` (length of w), ``validation`` (C →
    validation MAP), ``training`` (n_iter, converged, final gap/objective of the last cutting-plane
    iteration, n_queries, n_candidates), and ``weights_sha256`` (checksum of weights.npz).
``weights.npz``
    ``coef`` (w, length ``dim``) and ``thresholds`` (n_functions × n_bins, empty without bins).
``pt_meta.json``
    ``{"type": "learned_ranker", "format": "svmmap", "package_hint": "pyterrier-svmmap"}`` so that
    ``pt.Artifact.load(path)`` finds the loader registered under the ``pyterrier.artifact`` entry point.

Version 1 (before this module) had the same files without ``weights_sha256`` and ``pt_meta.json``;
it still loads. A newer version, a missing/corrupt/truncated file or inconsistent shapes raise
:class:`ModelFormatError` naming the file and the problem.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any, Dict, Union

import numpy as np

from ._version import __version__

FORMAT = "pyterrier-svmmap"
FORMAT_VERSION = 2
ARTIFACT_TYPE = "learned_ranker"
ARTIFACT_FORMAT = "svmmap"


class ModelFormatError(ValueError):
    """A model directory that cannot be read (the message says which file and why)."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonable(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return float(v)


def _finite_or_none(obj):
    """NaN/inf → None recursively, so that model.json is strict JSON."""
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def save_model(model, path: Union[str, Path]) -> Path:
    """Write a fitted StructSVM (or subclass) to directory ``path``."""
    if not hasattr(model, "coef_"):
        raise RuntimeError("save() needs a fitted model: call fit() first")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    thresholds = model.encoder_.thresholds_ if model.encoder_.thresholds_ is not None else np.zeros((0, 0))
    buf = io.BytesIO()
    np.savez(buf, coef=np.asarray(model.coef_, dtype=float), thresholds=np.asarray(thresholds, dtype=float))
    weights = buf.getvalue()
    loss = model.loss if isinstance(model.loss, str) else getattr(model.loss, "name", str(model.loss))
    history = getattr(model, "history_", None) or []
    meta: Dict[str, Any] = dict(
        format=FORMAT, format_version=FORMAT_VERSION, package_version=__version__,
        estimator=type(model).__name__,
        params=dict(C=float(model.C_), loss=loss, loss_params=model.loss_params, features=model.features,
                    n_bins=int(model.n_bins), binning=model.binning, epsilon=float(model.epsilon),
                    max_iter=int(model.max_iter), threshold_depth=model.threshold_depth, prior=model.prior,
                    prior_scale=float(model.prior_scale)),
        base_names=list(model.base_names_), n_functions=int(model.n_functions_), dim=int(len(model.coef_)),
        validation={str(k): v for k, v in getattr(model, "validation_", {}).items()},
        training=dict(n_iter=int(model.n_iter_), converged=bool(model.converged_),
                      final=history[-1] if history else None,
                      **getattr(model, "training_summary_", {})),
        weights_sha256=_sha256(weights))
    (path / "weights.npz").write_bytes(weights)
    (path / "model.json").write_text(json.dumps(_finite_or_none(meta), indent=2, default=_jsonable, allow_nan=False))
    (path / "pt_meta.json").write_text(json.dumps({"type": ARTIFACT_TYPE, "format": ARTIFACT_FORMAT,
                                                   "package_hint": "pyterrier-svmmap"}))
    return path


def read_metadata(path: Union[str, Path]) -> dict:
    """``model.json`` of a model directory, checked for format and version."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model {path} not found")
    if not path.is_dir():
        raise ModelFormatError(f"{path} is a file; a model is a directory holding model.json and weights.npz")
    mfile = path / "model.json"
    if not mfile.exists():
        raise ModelFormatError(f"{path} is not a pyterrier-svmmap model: no model.json in it")
    try:
        meta = json.loads(mfile.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelFormatError(f"{mfile} is corrupt or truncated (not valid JSON: {e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelFormatError(f"{mfile} is not a pyterrier-svmmap model (format={meta.get('format')!r})"
                               if isinstance(meta, dict) else f"{mfile} is not a pyterrier-svmmap model")
    version = meta.get("format_version")
    if not isinstance(version, int):
        raise ModelFormatError(f"{mfile}: format_version {version!r} is not an integer")
    if version > FORMAT_VERSION:
        raise ModelFormatError(f"{mfile} has model format version {version}, newer than this pyterrier-svmmap "
                               f"{__version__} reads (up to {FORMAT_VERSION}; written by version "
                               f"{meta.get('package_version', '?')}): upgrade pyterrier-svmmap")
    missing = [k for k in ("params", "base_names", "n_functions", "dim", "training") if k not in meta]
    if missing:
        raise ModelFormatError(f"{mfile} is incomplete: missing {missing}")
    return meta


def load_model(path: Union[str, Path], cls=None):
    """Read a model directory into a fitted estimator (``cls``, default the class named in the file)."""
    from .estimator import StructSVM, SVMMap
    from .features import FeatureEncoder
    path = Path(path)
    meta = read_metadata(path)
    wfile = path / "weights.npz"
    if not wfile.exists():
        raise ModelFormatError(f"{path}: weights.npz is missing")
    data = wfile.read_bytes()
    expected = meta.get("weights_sha256")
    if expected is not None and _sha256(data) != expected:
        raise ModelFormatError(f"{wfile} is corrupt or truncated (checksum differs from model.json's)")
    try:
        with np.load(io.BytesIO(data)) as arrays:
            coef, thresholds = arrays["coef"], arrays["thresholds"]
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError) as e:
        raise ModelFormatError(f"{wfile} is corrupt or truncated ({type(e).__name__}: {e})") from None
    p = meta["params"]
    F, dim = int(meta["n_functions"]), int(meta["dim"])
    if coef.shape != (dim,):
        raise ModelFormatError(f"{wfile}: w has shape {coef.shape}, model.json says ({dim},)")
    if cls is None:
        cls = {"SVMMap": SVMMap}.get(meta.get("estimator"), StructSVM)
    model = cls.__new__(cls)
    StructSVM.__init__(model, C=p["C"], loss=p["loss"], loss_params=p["loss_params"], features=p["features"],
                       n_bins=p["n_bins"], binning=p["binning"], epsilon=p["epsilon"], max_iter=p["max_iter"],
                       threshold_depth=p.get("threshold_depth"), prior=p.get("prior"),
                       prior_scale=p.get("prior_scale", 1.0))
    encoder = FeatureEncoder(p["features"], p["n_bins"], p["binning"], p.get("threshold_depth"))
    encoder.n_functions_ = F
    encoder.thresholds_ = thresholds if thresholds.size else None
    if "bins" in encoder.blocks and (encoder.thresholds_ is None or thresholds.shape != (F, int(p["n_bins"]))):
        raise ModelFormatError(f"{wfile}: thresholds have shape {thresholds.shape}, expected ({F}, {p['n_bins']})")
    width = sum(F * int(p["n_bins"]) if b == "bins" else 2 * F for b in encoder.blocks)
    if width != dim:
        raise ModelFormatError(f"{path}: w has {dim} dimensions but features={p['features']!r} on {F} base "
                               f"functions needs {width}")
    if len(meta["base_names"]) != F:
        raise ModelFormatError(f"{path}: {len(meta['base_names'])} base names for {F} base functions")
    model.C_ = p["C"]
    model.coef_ = coef
    model.n_functions_ = F
    model.base_names_ = list(meta["base_names"])
    model.encoder_ = encoder
    model.validation_ = {float(k): (np.nan if v is None else v) for k, v in meta.get("validation", {}).items()}
    final = meta["training"].get("final")
    model.history_ = [final] if final else []
    model.n_iter_ = meta["training"].get("n_iter")
    model.converged_ = meta["training"].get("converged")
    model.feature_names_ = encoder.feature_names(model.base_names_)
    model.metadata_ = meta
    model.path = path
    return model


def load_artifact(path: Union[str, Path], **kwargs):
    """The ``pyterrier.artifact`` entry point (``learned_ranker.svmmap``): ``pt.Artifact.load(path)``."""
    return load_model(path, **kwargs)
