"""The public API's documentation: every function and public method of ``pyterrier_svmmap.__all__``
documents its parameters numpydoc-style."""
from __future__ import annotations


def test_the_public_api_documents_its_parameters_numpydoc_style():
    """Every function and public method of ``pyterrier_svmmap.__all__`` that takes parameters has a numpydoc
    ``Parameters`` section (and no Google-style ``Args:``)."""
    import inspect

    import pyterrier_svmmap as ps
    missing = []
    for name in ps.__all__:
        obj = getattr(ps, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        targets = [obj] if inspect.isfunction(obj) else \
            [obj] + [m for k, m in vars(obj).items() if inspect.isfunction(m) and not k.startswith("_")]
        for target in targets:
            doc = inspect.getdoc(target) or ""
            try:
                params = [p for p in inspect.signature(target).parameters if p not in ("self", "cls")]
            except (TypeError, ValueError):
                params = []
            if "Args:" in doc or (params and "Parameters\n----------" not in doc):
                missing.append(target.__qualname__)
    assert not missing, missing
