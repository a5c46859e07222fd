"""The boosted peers on arrays: AdaRank, and LightGBM's LambdaMART and McRank."""
