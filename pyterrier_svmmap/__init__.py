"""pyterrier-svmmap: SVM-map and its structural-SVM relatives as PyTerrier transformers.

The PyTerrier layer (estimators, ``RunFeatures``) is imported on first use (PEP 562), so that the numeric
core and the command line (``svmmap learn/classify``) start without importing PyTerrier.
"""
from __future__ import annotations

import importlib

from pyterrier_svmmap._version import __version__

#: public name → module that defines it (imported when the name is first used)
_LAZY = {
    "SVMMap": "estimators.structsvm", "StructSVM": "estimators.structsvm", "RankerEstimator": "estimators.base",
    "DEFAULT_C_GRID": "selection", "SELECTION_C_GRID": "selection", "StructSVMRanker": "svm.ranker",
    "FeatureEncoder": "features.encoder", "FeatureLayout": "features.layout",
    "LOSSES": "svm.losses", "Loss": "svm.losses", "get_loss": "svm.losses", "make_slack_groups": "svm.slack",
    "most_violated": "svm.losses",
    "RunFeatures": "run_features",
    # the other learners, on the same RankerEstimator base; LightGBM (LambdaMART, McRank) is imported only
    # when one of them is fitted
    "ApproxAP": "estimators.approx", "ApproxNDCG": "estimators.approx", "LambdaMART": "estimators.peers",
    "McRank": "estimators.peers", "AdaRank": "estimators.peers",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
