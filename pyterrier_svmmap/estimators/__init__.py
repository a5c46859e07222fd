"""The PyTerrier estimators: the shared base (:mod:`.base`), the structural SVMs (:mod:`.structsvm`), ApproxAP /
ApproxNDCG (:mod:`.approx`) and the boosted peers (:mod:`.peers`)."""
