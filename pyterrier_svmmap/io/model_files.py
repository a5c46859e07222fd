"""The model directory format (``model.json``, ``weights.npz``, ``pt_meta.json``) shared by ``save``/``load``, the
command line and ``pt.Artifact`` (docs/user_guide.md#saving-and-loading)."""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from pyterrier_svmmap._version import __version__
from pyterrier_svmmap.io.atomic import write_folder
from pyterrier_svmmap.state import StateError

FORMAT = "pyterrier-svmmap"
FORMAT_VERSION = 3
ARTIFACT_TYPE = "learned_ranker"
ARTIFACT_FORMAT = "svmmap"
PT_META = {"type": ARTIFACT_TYPE, "format": ARTIFACT_FORMAT, "package_hint": "pyterrier-svmmap"}

#: model.json's fixed names of the package's public classes → their names in ``pyterrier_svmmap``
FILE_NAMES = {
    "pyterrier_svmmap.estimator:SVMMap": "SVMMap",
    "pyterrier_svmmap.estimator:StructSVM": "StructSVM",
    "pyterrier_svmmap.approx_estimators:ApproxAP": "ApproxAP",
    "pyterrier_svmmap.approx_estimators:ApproxNDCG": "ApproxNDCG",
    "pyterrier_svmmap.approx_estimators:LambdaMART": "LambdaMART",
    "pyterrier_svmmap.approx_estimators:McRank": "McRank",
    "pyterrier_svmmap.approx_estimators:AdaRank": "AdaRank",
    "pyterrier_svmmap.ranker:StructSVMRanker": "StructSVMRanker",
}
#: a public class's name → its name in model.json (the inverse of :data:`FILE_NAMES`)
FILE_NAME_OF = {public: name for name, public in FILE_NAMES.items()}


class ModelFormatError(ValueError):
    """A model directory that cannot be read (the message names the file and why)."""


def class_path(cls) -> str:
    """The name model.json gives a class: :data:`FILE_NAME_OF`'s, else ``module:qualname``."""
    if cls.__qualname__ in FILE_NAME_OF and cls.__module__.startswith("pyterrier_svmmap."):
        return FILE_NAME_OF[cls.__qualname__]
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(path: str):
    """The class a model file names, only from this package (a model file must not import arbitrary code)."""
    path = str(path)
    if path in FILE_NAMES:
        path = f"pyterrier_svmmap:{FILE_NAMES[path]}"
    module, _, name = path.partition(":")
    if not (module == "pyterrier_svmmap" or module.startswith("pyterrier_svmmap.")) or not name:
        raise ModelFormatError(f"model names class {path!r}, which is not a pyterrier_svmmap class")
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise ModelFormatError(f"model names class {path!r}, which this pyterrier-svmmap {__version__} lacks "
                               f"({e})") from None
    return obj


def jsonable(obj):
    """``obj`` as strict-JSON values (floats read back bit for bit; NaN/inf become None)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def check_writable(path: Union[str, Path], force: bool = False, remedy: str = "overwrite=True") -> Path:
    """``path`` checked before training: FileExistsError for a file or, unless ``force``, a directory of other files."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{path} is an existing file; a model is a directory: give a new or a directory path")
    if not force and path.is_dir() and any(path.iterdir()) and not (path / "model.json").is_file():
        raise FileExistsError(f"{path} is a directory that holds other files but no model; give a new directory, "
                              f"an existing model directory to replace, or {remedy} to write into it")
    return path


def save_model(path: Union[str, Path], estimator: str, params: dict, state: Tuple[dict, Dict[str, np.ndarray]],
               ranker: Optional[str] = None, overwrite: bool = False, implied: Optional[Dict[str, Any]] = None) -> Path:
    """Write a fitted model whole or not at all (``params`` without the ``implied`` ones at their implied value)."""
    path = check_writable(path, force=overwrite)
    meta, arrays = state
    implied = implied or {}
    params = _without_implied(params, implied)
    if isinstance(meta.get("params"), dict):
        meta = dict(meta, params=_without_implied(meta["params"], implied))
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    weights = buf.getvalue()
    doc: Dict[str, Any] = dict(format=FORMAT, format_version=FORMAT_VERSION, package_version=__version__,
                               estimator=estimator, ranker=ranker, params=jsonable(params), state=jsonable(meta),
                               arrays_sha256=hashlib.sha256(weights).hexdigest())
    return write_folder(path, {"weights.npz": weights, "pt_meta.json": json.dumps(PT_META).encode(),
                               "model.json": json.dumps(doc, indent=1, allow_nan=False).encode()})


def _without_implied(params: dict, implied: Dict[str, Any]) -> dict:
    return {k: v for k, v in params.items() if not (k in implied and v == implied[k] and type(v) is type(implied[k]))}


def implied_params(cls) -> Dict[str, Any]:
    """The parameters of ``cls`` that older files lack, with what such a file means."""
    return dict(cls.PARAMS.implied) if hasattr(cls, "PARAMS") else {}


def read_model(path: Union[str, Path]) -> Tuple[dict, Dict[str, np.ndarray]]:
    """(model.json as a version-3 document, the arrays), checked."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model {path} not found")
    if not path.is_dir():
        raise ModelFormatError(f"{path} is a file; a model is a directory holding model.json and weights.npz")
    mfile = path / "model.json"
    if not mfile.exists():
        raise ModelFormatError(f"{path} is not a pyterrier-svmmap model: no model.json in it")
    try:
        doc = json.loads(mfile.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelFormatError(f"{mfile} is corrupt or truncated (not valid JSON: {e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelFormatError(f"{mfile} is not a pyterrier-svmmap model (format={doc.get('format')!r})"
                               if isinstance(doc, dict) else f"{mfile} is not a pyterrier-svmmap model")
    version = doc.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFormatError(f"{mfile}: format_version {version!r} is not an integer")
    if version > FORMAT_VERSION:
        raise ModelFormatError(f"{mfile} has model format version {version}, newer than this pyterrier-svmmap "
                               f"{__version__} reads (up to {FORMAT_VERSION}; written by version "
                               f"{doc.get('package_version', '?')}): upgrade pyterrier-svmmap")
    required = ("params", "base_names", "n_functions", "dim", "training") if version <= 2 else \
        ("estimator", "params", "state")
    missing = [k for k in required if k not in doc]
    if missing:
        raise ModelFormatError(f"{mfile} is incomplete: missing {missing}")
    wfile = path / "weights.npz"
    if not wfile.exists():
        raise ModelFormatError(f"{path}: weights.npz is missing")
    data = wfile.read_bytes()
    expected = doc.get("arrays_sha256", doc.get("weights_sha256"))
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise ModelFormatError(f"{wfile} is corrupt or truncated (checksum differs from model.json's)")
    try:
        with np.load(io.BytesIO(data)) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, KeyError) as e:
        raise ModelFormatError(f"{wfile} is corrupt or truncated ({type(e).__name__}: {e})") from None
    if version <= 2:
        doc, arrays = _upgrade_v2(path, doc, arrays)
    check_params(path, doc)
    return doc, arrays


#: where a fitted state records the parameters it was trained with, looked up in this order
_RECORDS = (("state.params", ("params",)), ("state.ranker.params", ("ranker", "params")), ("state.layout", ("layout",)))


def _recorded_params(state) -> Dict[str, Tuple[str, Any]]:
    """The parameters a state records: name → (field, value)."""
    out: Dict[str, Tuple[str, Any]] = {}
    for field, keys in _RECORDS:
        record = state
        for k in keys:
            record = record.get(k) if isinstance(record, dict) else None
        if isinstance(record, dict):
            for name, value in record.items():
                out.setdefault(name, (f"{field}.{name}", value))
    return out


def _same_param(a, b) -> bool:
    """Whether two parameter values are the same setting (a number and a one-element list of it are)."""
    if isinstance(a, list) != isinstance(b, list):
        a, b = (a if isinstance(a, list) else [a]), (b if isinstance(b, list) else [b])
    if isinstance(a, list):
        return len(a) == len(b) and all(_same_param(x, y) for x, y in zip(a, b))
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
        return float(a) == float(b)
    return a == b


def check_params(path: Union[str, Path], doc: dict) -> None:
    """Refuse a model whose ``params`` differ from those its state was trained with (an edited model.json)."""
    mfile = Path(path) / "model.json"
    params, state = doc.get("params"), doc.get("state")
    if not isinstance(params, dict):
        raise ModelFormatError(f"{mfile}: params must be a dict of the estimator's parameters, got "
                               f"{type(params).__name__}")
    if not isinstance(state, dict):
        raise ModelFormatError(f"{mfile}: state must be a dict, got {type(state).__name__}")
    recorded = _recorded_params(state)
    try:
        # the ranker's spec when the file names one (no PyTerrier imported), else the estimator's
        implied = implied_params(import_class(doc.get("ranker") or doc.get("estimator", "")))
    except (ModelFormatError, ImportError, AttributeError, ValueError):
        implied = {}
    for name, value in dict(implied, **params).items():
        if name not in recorded and name not in implied:
            continue
        field, trained = recorded.get(name, (f"state.params.{name}", implied.get(name)))
        if not _same_param(value, trained):
            raise ModelFormatError(f"{mfile}: params.{name} is {value!r} but {field} is {trained!r}, the value the "
                                   f"model was trained with: restore params.{name}, or train a model with the "
                                   "parameter you want")


def _located(path: Path, e: Exception) -> ModelFormatError:
    """A state's error as a ModelFormatError naming the file and the field."""
    if isinstance(e, StateError):
        where = f"{path / 'weights.npz'}: {e.field}" if e.array else f"{path / 'model.json'}: state.{e.field}"
        return ModelFormatError(f"{where}: {e.problem}")
    return ModelFormatError(f"{path}: {e}")


def _upgrade_v2(path: Path, doc: dict, arrays: Dict[str, np.ndarray]) -> Tuple[dict, Dict[str, np.ndarray]]:
    """A format 1/2 model (a structural SVM, the kept C's weights only) as a version-3 document."""
    p = doc["params"]
    missing = [k for k in ("C", "loss", "features", "n_bins", "binning", "epsilon", "max_iter") if k not in p]
    if missing or "coef" not in arrays or "thresholds" not in arrays:
        raise ModelFormatError(f"{path / 'model.json'} (format {doc['format_version']}) is incomplete: missing "
                               f"{missing + [k for k in ('coef', 'thresholds') if k not in arrays]}")
    kept = float(p["C"])
    validation = {float(k): v for k, v in (doc.get("validation") or {}).items()} or {kept: None}
    grid = sorted(validation) if kept in validation else [kept]
    coef = np.asarray(arrays["coef"], dtype=float)
    coefs = np.full((len(grid), len(coef)), np.nan)
    coefs[grid.index(kept)] = coef
    training = doc.get("training") or {}
    params = dict(C=grid, loss=p["loss"], loss_params=p.get("loss_params"), features=p["features"],
                  n_bins=int(p["n_bins"]), binning=p["binning"], threshold_depth=p.get("threshold_depth"),
                  epsilon=float(p["epsilon"]), max_iter=int(p["max_iter"]), prior=p.get("prior"),
                  prior_scale=float(p.get("prior_scale", 1.0)))
    layout = dict({k: params[k] for k in ("features", "n_bins", "binning", "threshold_depth")},
                  n_functions=int(doc["n_functions"]), bias=None, base_names=list(doc["base_names"]))
    state = dict(params=params, C_=kept, layout=layout,
                 path=[dict(C=c, validation=validation[c], n_iter=training.get("n_iter") if c == kept else None,
                            converged=training.get("converged") if c == kept else None) for c in grid],
                 history=[training["final"]] if training.get("final") else [], n_iter=int(training.get("n_iter") or 0),
                 converged=bool(training.get("converged")),
                 training={k: v for k, v in training.items() if k not in ("n_iter", "converged", "final")})
    estimator = FILE_NAME_OF["SVMMap" if doc.get("estimator") == "SVMMap" else "StructSVM"]
    new_doc = dict(doc, format_version=FORMAT_VERSION, estimator=estimator, ranker=FILE_NAME_OF["StructSVMRanker"],
                   params=dict(params), state=state)
    return new_doc, dict(coef=coef, coefs=coefs, thresholds=np.asarray(arrays["thresholds"], dtype=float))


def load_model(path: Union[str, Path], cls=None):
    """A fitted estimator from a model directory (``cls``: the class expected)."""
    path = Path(path)
    doc, arrays = read_model(path)
    named = import_class(doc["estimator"])
    if cls is not None and not issubclass(named, cls) and not issubclass(cls, named):
        raise ModelFormatError(f"{path} holds a {named.__name__} model, not a {cls.__name__}")
    target = cls if cls is not None and issubclass(cls, named) else named
    params = dict({k: v for k, v in implied_params(target).items() if k not in doc["params"]}, **doc["params"])
    try:
        target.from_params(params)
    except (ValueError, TypeError) as e:
        raise ModelFormatError(f"{path / 'model.json'}: params: {e}") from None
    try:
        model = target._from_state(params, doc["state"], arrays)
    except (ValueError, KeyError, TypeError) as e:
        raise _located(path, e) from None
    model.metadata_ = doc
    model.path = path
    return model


def load_ranker(path: Union[str, Path]):
    """The model's array-level ranker (no PyTerrier imported) when it has one, else the estimator."""
    path = Path(path)
    doc, arrays = read_model(path)
    if not doc.get("ranker"):
        return load_model(path)
    try:
        return import_class(doc["ranker"]).from_state(doc["state"], arrays)
    except (ValueError, KeyError, TypeError) as e:
        raise _located(path, e) from None


#: the ``pyterrier.artifact`` entry point (``learned_ranker.svmmap``)
load_artifact = load_model
