"""pyterrier-svmmap: SVM-map and its structural-SVM relatives as PyTerrier transformers."""
from ._version import __version__
from .estimator import DEFAULT_C_GRID, RankerEstimator, StructSVM, SVMMap
from .features import FeatureEncoder
from .losses import LOSSES, Loss, get_loss, make_slack_groups, most_violated
from .run_features import RunFeatures

# the other learners, on the same RankerEstimator base; LightGBM (LambdaMART, McRank) is imported only
# when one of them is fitted, so the package imports without it
from .approx_estimators import AdaRank, ApproxAP, ApproxNDCG, LambdaMART, McRank

__all__ = ["__version__", "SVMMap", "StructSVM", "RankerEstimator", "RunFeatures", "FeatureEncoder",
           "DEFAULT_C_GRID", "most_violated", "get_loss", "make_slack_groups", "Loss", "LOSSES",
           "ApproxAP", "ApproxNDCG", "LambdaMART", "McRank", "AdaRank"]
