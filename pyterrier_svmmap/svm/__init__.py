"""The structural SVM on arrays: the learner (:mod:`.ranker`), the cutting-plane solver (:mod:`.cutting_plane`),
its dual QP (:mod:`.qp`, compiled in :mod:`._qp_kernels`), the losses (:mod:`.losses`, one module each) and
their slack groups (:mod:`.slack`), and the extension point for training on shards (:mod:`.executors`)."""
