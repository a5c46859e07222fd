"""Sub-commands of ``svmmap`` that mirror svm_map_learn / svm_map_classify (see :mod:`pyterrier_svmmap.cli`)."""
