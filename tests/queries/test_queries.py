"""Query-grouped arrays (pyterrier_svmmap.queries): the Queries type and the offset helpers."""
import numpy as np
import pytest

from pyterrier_svmmap.queries import Queries, query_ids, shard_sizes, split_queries, usable_queries


def _queries():
    raw = np.arange(14.0).reshape(7, 2)
    labels = np.array([1, 0, 0, 0, 2, 0, 1.0])
    return Queries.from_arrays(raw, labels, [0, 2, 4, 7], qids=["a", "b", "c"], n_relevant=[1, 0, 2],
                               docnos=np.array(list("pqrstuv")))


def test_from_arrays_defaults_and_types():
    q = Queries.from_arrays([[1], [2]], [0, 1], [0, 2])
    assert q.raw.dtype == float and q.offsets.dtype == np.int64 and list(q.qids) == [0]
    assert q.n_queries == 1 and q.n_functions == 1


def test_usable_and_subset_keep_what_belongs_to_the_queries():
    q = _queries()
    assert list(q.usable()) == [True, False, True] == list(usable_queries(q.labels, q.offsets))
    s = q.subset(q.usable())
    assert list(s.offsets) == [0, 2, 5] and list(s.qids) == ["a", "c"] and list(s.n_relevant) == [1, 2]
    assert "".join(s.docnos) == "pqtuv" and np.array_equal(s.raw, q.raw[[0, 1, 4, 5, 6]])


def test_subset_and_widened_keep_a_subclass_and_its_fields():
    """A LETOR file (experiments.letor.Split) is Queries with its source: both operations keep it."""
    from pyterrier_svmmap.experiments.letor import Split
    q = _queries()
    split = Split(q.raw, q.labels, q.offsets, q.qids, None, q.docnos, "Fold1/train.txt")
    first = split.head(2)
    assert isinstance(first, Split) and first.source == "Fold1/train.txt" and list(first.offsets) == [0, 2, 4]
    assert "".join(first.docnos) == "pqrs" and first.head(5).n_queries == 2
    wide = split.widened(4)
    assert isinstance(wide, Split) and wide.source == split.source and wide.raw.shape == (7, 4)
    assert split.widened(2) is split


def test_concatenate_widens_and_joins_in_order():
    q = _queries()
    narrow = Queries.from_arrays(np.ones((2, 1)), [1, 0], [0, 2], qids=["d"])
    both = Queries.concatenate([q, narrow])
    assert both.n_functions == 2 and list(both.offsets) == [0, 2, 4, 7, 9]
    assert list(both.raw[-1]) == [1.0, 0.0] and list(both.qids) == ["a", "b", "c", "d"]
    assert both.docnos is None and both.n_relevant is None            # not known for every part
    with pytest.raises(ValueError):
        Queries.concatenate([])


def test_offset_helpers():
    offsets = np.array([0, 3, 3, 7])
    assert list(query_ids(offsets)) == [0, 0, 0, 2, 2, 2, 2]
    assert list(shard_sizes(5, 2)) == [2, 2, 1]
    parts = split_queries(np.zeros((7, 1)), np.zeros(7), offsets, [2, 1])
    assert [list(p[2]) for p in parts] == [[0, 3, 3], [0, 4]]


def test_a_ranker_takes_queries_as_validation_data():
    from pyterrier_svmmap import StructSVMRanker
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(60, 3))
    labels = (raw[:, 0] + 0.3 * rng.normal(size=60) > 0.5).astype(float)
    offsets = np.arange(0, 61, 10)
    valid = Queries.from_arrays(raw, labels, offsets)
    a = StructSVMRanker(C=[0.1, 10.0], features="raw").fit(raw, labels, offsets, valid=valid)
    b = StructSVMRanker(C=[0.1, 10.0], features="raw").fit(raw, labels, offsets, valid=(raw, labels, offsets))
    assert np.array_equal(a.coef_, b.coef_) and [p["validation"] for p in a.path_] == [p["validation"] for p in b.path_]


def _ranker_data(seed=0, n_q=24, n=20, F=4):
    rng = np.random.default_rng(seed)
    raw = rng.random((n_q * n, F))
    labels = (raw[:, 0] + 0.3 * rng.normal(size=n_q * n) > 0.8).astype(float)
    labels[::n] = 1.0
    labels[1::n] = 0.0
    return Queries(raw, labels, np.arange(0, n_q * n + 1, n, dtype=np.int64))


def _rankers():
    from pyterrier_svmmap.boosting.adarank import AdaRankRanker
    from pyterrier_svmmap.svm.ranker import StructSVMRanker
    out = [lambda: StructSVMRanker(C=[0.1, 1.0], features="raw"), lambda: AdaRankRanker()]
    try:
        import lightgbm  # noqa: F401
        from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker
        from pyterrier_svmmap.boosting.mcrank import McRankRanker
        out += [lambda: LambdaMARTRanker(n_estimators=5), lambda: McRankRanker(n_estimators=5)]
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("make", _rankers())
def test_every_array_level_learner_follows_the_query_ranker_protocol(make):
    """fit_queries(train, valid) is fit on the arrays, returns self; decision_function scores; the state
    round-trips to the same scores."""
    from pyterrier_svmmap.queries import QueryRanker
    data = _ranker_data()
    train, valid, test = data.subset(np.arange(24) < 12), data.subset((np.arange(24) >= 12) & (np.arange(24) < 18)), \
        data.subset(np.arange(24) >= 18)
    ranker = make()
    assert isinstance(ranker, QueryRanker)
    assert ranker.fit_queries(train, valid) is ranker
    scores = ranker.decision_function(test.raw, test.offsets)
    assert scores.shape == (len(test.raw),)
    direct = make()
    args = (valid.raw, valid.labels, valid.offsets)
    if type(direct).__name__ == "StructSVMRanker":
        direct.fit(train.raw, train.labels, train.offsets, valid=args)
    else:
        direct.fit(train.raw, train.labels, train.offsets, *args)
    assert np.array_equal(direct.decision_function(test.raw, test.offsets), scores)
    meta, arrays = ranker.get_state()
    assert np.array_equal(type(ranker).from_state(meta, arrays).decision_function(test.raw, test.offsets), scores)


def test_as_queries_reads_the_forms_of_valid():
    from pyterrier_svmmap.queries import Queries, as_queries
    raw, labels, offsets = np.zeros((3, 2)), np.array([1.0, 0, 0]), np.array([0, 3])
    q = Queries(raw, labels, offsets, n_relevant=np.array([2]), docnos=np.array(["a", "b", "c"]))
    assert as_queries(q) is q and as_queries(None) is None
    three = as_queries((raw, labels, offsets))
    assert three.raw is raw and three.labels is labels and three.n_relevant is None and three.docnos is None
    five = as_queries((q.raw, q.labels, q.offsets, q.n_relevant, q.docnos))
    assert five.n_relevant is q.n_relevant and five.docnos is q.docnos
    four = as_queries((raw, labels, offsets, q.n_relevant))
    assert four.n_relevant is q.n_relevant and four.docnos is None
    with pytest.raises(ValueError, match="valid must be Queries, \\(raw, labels, offsets\\)"):
        as_queries((raw, labels))
