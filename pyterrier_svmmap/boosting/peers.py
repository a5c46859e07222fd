"""The boosted peers of SVM-map under one name: :class:`LambdaMARTRanker` (:mod:`.lambdamart`),
:class:`McRankRanker` (:mod:`.mcrank`), :class:`AdaRankRanker` (:mod:`.adarank`) and what they share
(:mod:`.common`)."""
from pyterrier_svmmap.boosting.adarank import AdaRankRanker
from pyterrier_svmmap.boosting.common import PEERS_HINT, fill_missing, query_minmax
from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker
from pyterrier_svmmap.boosting.mcrank import McRankRanker

__all__ = ["AdaRankRanker", "LambdaMARTRanker", "McRankRanker", "PEERS_HINT", "fill_missing", "query_minmax"]
