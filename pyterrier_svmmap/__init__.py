"""pyterrier-svmmap: SVM-map and its structural-SVM relatives as PyTerrier transformers."""
from ._version import __version__
from .losses import get_loss, make_slack_groups, most_violated

__all__ = ["__version__", "get_loss", "make_slack_groups", "most_violated"]
