"""Every public learner writes its constructor out (issue 38, item 3): the class's source has a keyword-only
``__init__`` of exactly its ``PARAMS`` (names, order, defaults) that stores each argument unchanged, and
``inspect.signature``, the numpydoc ``Parameters`` section and ``help()`` say the same."""
import ast
import inspect
import pydoc
import re
import sys
import textwrap

import pytest

import pyterrier_svmmap as ps
from pyterrier_svmmap.approx.ranker import ApproxRanker
from pyterrier_svmmap.boosting.adarank import AdaRankRanker
from pyterrier_svmmap.boosting.lambdamart import LambdaMARTRanker
from pyterrier_svmmap.boosting.mcrank import McRankRanker
from pyterrier_svmmap.params import Param, Parametrized, ParamSpec, _same_default
from pyterrier_svmmap.svm.ranker import StructSVMRanker

ESTIMATORS = [ps.SVMMap, ps.StructSVM, ps.ApproxAP, ps.ApproxNDCG, ps.AdaRank, ps.LambdaMART, ps.McRank]
RANKERS = [StructSVMRanker, ApproxRanker, AdaRankRanker, LambdaMARTRanker, McRankRanker]
CLASSES = ESTIMATORS + RANKERS
#: the abstract bases, which take no parameters of their own
BASES = {"Peer", "RankerEstimator"}


#: the spec's notion of an equal default (the same type and value, or the same object)
_same = _same_default


def _init_node(cls) -> ast.FunctionDef:
    """The ``__init__`` written in the class's own source (AssertionError when there is none)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    inits = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    assert len(inits) == 1, f"{cls.__name__}'s source writes no __init__"
    return inits[0]


def _value(node: ast.expr, module):
    """A default as written: a literal, or a name such as ``DEFAULT_C_GRID`` evaluated in the class's module."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return eval(compile(ast.Expression(node), "<default>", "eval"), vars(module))


def source_signature(cls):
    """[(name, default)] of the keyword-only parameters of the ``__init__`` in ``cls``'s source."""
    init = _init_node(cls)
    a = init.args
    assert [x.arg for x in a.posonlyargs + a.args] == ["self"], f"{cls.__name__}.__init__ takes positional arguments"
    assert a.vararg is None and a.kwarg is None, f"{cls.__name__}.__init__ takes *args or **kwargs"
    assert all(d is not None for d in a.kw_defaults), f"{cls.__name__}.__init__ has a parameter without default"
    module = sys.modules[cls.__module__]
    return [(arg.arg, _value(d, module)) for arg, d in zip(a.kwonlyargs, a.kw_defaults)]


def constructor_problems(cls, spec: ParamSpec):
    """What the source of ``cls`` says differently from ``spec``: names, order, defaults, and whether the body is
    ``self.name = name`` for each, in order and nothing else (scikit-learn's rule)."""
    problems = []
    written = source_signature(cls)
    if [n for n, _ in written] != list(spec.names):
        problems.append(f"__init__ takes {[n for n, _ in written]}, PARAMS declares {list(spec.names)}")
    for name, default in written:
        if name in spec and not _same(default, spec[name].default):
            problems.append(f"{name}: __init__'s default {default!r}, PARAMS' {spec[name].default!r}")
    body = [s for s in _init_node(cls).body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]        # a docstring
    stores = [ast.unparse(s) for s in body]
    if stores != [f"self.{n} = {n}" for n, _ in written]:
        problems.append(f"__init__'s body is {stores}, not self.name = name for each argument")
    return problems


def doc_parameters(cls):
    """The names in the numpydoc ``Parameters`` section of the class docstring, in order."""
    lines = inspect.cleandoc(cls.__doc__).splitlines()
    start = lines.index("Parameters")
    assert lines[start + 1].startswith("---")
    names = []
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1]):
            break                                              # the next section's title
        match = re.match(r"(\w+) : ", line)
        if match:
            names.append(match.group(1))
    return names


def _all_parametrized(cls=Parametrized):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_parametrized(sub)


def test_every_public_learner_is_covered():
    public = {c for c in _all_parametrized() if not c.__name__.startswith("_") and c.__name__ not in BASES
              and c.__module__.startswith("pyterrier_svmmap.")}
    assert public <= set(CLASSES), sorted(c.__name__ for c in public - set(CLASSES))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_source_writes_init_out_with_the_spec_parameters(cls):
    assert "__init__" in cls.__dict__
    assert constructor_problems(cls, cls.PARAMS) == []


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_signature_is_the_source(cls):
    signature = inspect.signature(cls)
    got = [(p.name, p.default) for p in signature.parameters.values()]
    written = source_signature(cls)
    assert [n for n, _ in got] == [n for n, _ in written]
    assert all(_same(a, b) for (_, a), (_, b) in zip(got, written))
    assert all(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values())


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_docstring_parameters_are_the_signature(cls):
    assert doc_parameters(cls) == list(inspect.signature(cls).parameters) == list(cls.PARAMS.names)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_help_shows_every_parameter(cls):
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for name in cls.PARAMS.names:
        assert f"{name}=" in text, (cls.__name__, name)          # the signature
        assert f"{name} : " in text, (cls.__name__, name)        # the Parameters section


# -- a parameter declared but not written out is caught --------------------------------------------------------
def test_a_spec_parameter_missing_from_init_is_reported():
    extra = ps.StructSVM.PARAMS.plus(Param("extra", 1, "int", "Not in __init__."))
    assert constructor_problems(ps.StructSVM, extra)
    other = ps.StructSVM.PARAMS.with_defaults(n_bins=7)
    assert constructor_problems(ps.StructSVM, other) == ["n_bins: __init__'s default 50, PARAMS' 7"]


def test_a_class_whose_init_differs_from_its_params_is_refused_when_created():
    spec = ParamSpec([Param("a", 1, "int", "A."), Param("b", 2, "int", "B.")])
    with pytest.raises(TypeError, match=r"takes \['a'\], but PARAMS declares \['a', 'b'\]"):
        class _Missing(Parametrized):
            PARAMS = spec

            def __init__(self, *, a=1):
                self.a = a
    with pytest.raises(TypeError, match="b's default is 3"):
        class _OtherDefault(Parametrized):
            PARAMS = spec

            def __init__(self, *, a=1, b=3):
                self.a, self.b = a, b
    with pytest.raises(TypeError, match="a is not keyword-only"):
        class _Positional(Parametrized):
            PARAMS = spec

            def __init__(self, a=1, *, b=2):
                self.a, self.b = a, b

    class _Written(Parametrized):
        PARAMS = spec

        def __init__(self, *, a=1, b=2):
            self.a = a
            self.b = b

    assert _Written(b=5).get_params() == {"a": 1, "b": 5}
