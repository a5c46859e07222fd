"""φ, the joint feature map's per-candidate part: the blocks and thresholds (:mod:`.encoder`, compiled in
:mod:`._kernels`) and the fitted layout a model keeps (:mod:`.layout`)."""
