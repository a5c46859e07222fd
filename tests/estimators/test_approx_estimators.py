"""The PyTerrier estimators: frames in, frames with score/rank out, learning on a synthetic run."""
import numpy as np
import pytest

pt = pytest.importorskip("pyterrier")
import pyterrier_svmmap as ae  # noqa: E402
from pyterrier_svmmap.estimators.base import RankerEstimator  # noqa: E402
from pyterrier_svmmap.frames import candidates_from_frame  # noqa: E402
from pyterrier_svmmap.measures import average_precision  # noqa: E402
from tests.helpers import run  # noqa: E402




def test_candidates_group_queries_and_count_unretrieved_relevant():
    res, qrels = run(0, n_queries=3, n_cand=5)
    c = candidates_from_frame(res, qrels)
    assert c.raw.shape == (15, 4) and list(c.offsets) == [0, 5, 10, 15]
    assert (c.frame["qid"].to_numpy()[c.offsets[:-1]] == sorted(set(c.frame["qid"]))).all()
    np.testing.assert_array_equal(c.n_relevant, np.add.reduceat(c.labels, c.offsets[:-1]) + 1)


@pytest.mark.parametrize("cls", [ae.ApproxAP, ae.ApproxNDCG, ae.LambdaMART, ae.McRank, ae.AdaRank])
def test_all_learners_share_the_ranker_estimator_base(cls):
    import pyterrier_svmmap
    assert issubclass(cls, RankerEstimator)
    assert getattr(pyterrier_svmmap, cls.__name__) is cls


@pytest.mark.parametrize("make", [
    lambda: ae.ApproxAP(alphas=[10.0], betas=[10.0], n_iter=10, learning_rate=0.05),
    lambda: ae.ApproxNDCG(alphas=[10.0], n_iter=10, learning_rate=0.05),
    lambda: ae.AdaRank(n_rounds=10),
    lambda: ae.LambdaMART(n_estimators=50),
    lambda: ae.McRank(),
])
def test_estimator_learns(make):
    model = make()
    if type(model).__name__ in ("LambdaMART", "McRank"):
        pytest.importorskip("lightgbm")
    train, train_qrels = run(0)
    valid, valid_qrels = run(1)
    test, test_qrels = run(2)
    assert model.fit(train, train_qrels, valid, valid_qrels) is model
    out = model.transform(test)
    assert {"score", "rank"} <= set(out.columns) and len(out) == len(test)
    assert (out.groupby("qid")["rank"].min() == 0).all()
    c = candidates_from_frame(out, test_qrels)
    labels, offsets, n_rel = c.labels, c.offsets, c.n_relevant
    scored = c.frame["score"].to_numpy()
    learned = average_precision(scored, labels, offsets, n_rel).mean()
    rnd = average_precision(np.random.default_rng(0).random(len(labels)), labels, offsets, n_rel).mean()
    assert learned > rnd + 0.25


def test_transform_before_fit_fails():
    with pytest.raises(RuntimeError):
        ae.ApproxAP().transform(run(0)[0])
