"""The boosted peers on arrays: AdaRank and the LightGBM rankers LambdaMART and McRank (:mod:`.peers`)."""
