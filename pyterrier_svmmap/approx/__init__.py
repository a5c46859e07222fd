"""ApproxAP and ApproxNDCG (Qin, Liu & Li 2010) on arrays (:mod:`.ranker`, compiled in :mod:`._kernels`)."""
