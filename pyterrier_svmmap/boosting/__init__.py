"""The boosted peers on arrays: AdaRank (:mod:`.adarank`) and the LightGBM rankers LambdaMART (:mod:`.lambdamart`)
and McRank (:mod:`.mcrank`), with what they share in :mod:`.common`."""
