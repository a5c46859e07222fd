"""Constructor parameters, declared once per learner as a :class:`ParamSpec` of :class:`Param` that a
:class:`Parametrized` class's written-out ``__init__`` is checked against."""
from __future__ import annotations

import inspect
import math
import numbers
import textwrap
from dataclasses import dataclass, replace
from typing import Any, Callable, ClassVar, Dict, Iterator, Optional, Sequence, Tuple

import numpy as np

#: a :class:`Param` field that has no value
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


@dataclass(frozen=True)
class Param:
    """One constructor parameter: keyword, default, type and prose, ``check(value)`` (a message or None), whether it
    changes the model or is this machine's (``runtime``, never saved), the value older model files mean
    (``implied``), its ``svmmap learn`` option and the docstring's ``default_doc``."""
    name: str
    default: Any
    type_doc: str
    doc: str
    check: Optional[Callable[[Any], Optional[str]]] = None
    model: bool = True
    runtime: bool = False
    implied: Any = MISSING
    cli: Optional[str] = None
    default_doc: Optional[str] = None


class ParamSpec:
    """An ordered set of :class:`Param` (the order of the signature and of the docstring)."""

    def __init__(self, params: Sequence[Param]):
        self.params: Tuple[Param, ...] = tuple(params)
        self.names: Tuple[str, ...] = tuple(p.name for p in self.params)
        #: the parameters that change the model (shown by ``repr``, saved in model files)
        self.model_names: Tuple[str, ...] = tuple(p.name for p in self.params if p.model)
        #: the parameters of the machine, not of the model (never saved)
        self.runtime_names: Tuple[str, ...] = tuple(p.name for p in self.params if p.runtime)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"duplicate parameters in {list(self.names)}")
        self._by_name = {p.name: p for p in self.params}

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    def __getitem__(self, name: str) -> Param:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    @property
    def implied(self) -> Dict[str, Any]:
        """name → the value a model file written before the parameter existed means."""
        return {p.name: p.implied for p in self.params if p.implied is not MISSING}

    @property
    def defaults(self) -> Dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def with_defaults(self, **defaults: Any) -> "ParamSpec":
        self._known(defaults)
        return ParamSpec([replace(p, default=defaults[p.name], default_doc=None) if p.name in defaults else p
                          for p in self.params])

    def without(self, *names: str) -> "ParamSpec":
        self._known(names)
        return ParamSpec([p for p in self.params if p.name not in names])

    def _known(self, names) -> None:
        unknown = set(names) - set(self.names)
        if unknown:
            raise ValueError(f"no parameters {sorted(unknown)}")

    def plus(self, *params: Param) -> "ParamSpec":
        return ParamSpec([*self.params, *params])

    def problems(self, values: Dict[str, Any]) -> Iterator[str]:
        """The message of every parameter whose check refuses its value in ``values``."""
        for p in self.params:
            if p.check is not None and p.name in values:
                message = p.check(values[p.name])
                if message:
                    named = message if message.startswith(p.name + " ") else f"{p.name} {message}"
                    yield named if "got " in message else f"{named}, got {values[p.name]!r}"

    def doc_section(self, indent: str = "    ") -> str:
        lines = ["Parameters", "----------"]
        for p in self.params:
            shown = p.default_doc if p.default_doc is not None else repr(p.default)
            lines.append(f"{p.name} : {p.type_doc}, default {shown}")
            lines += textwrap.wrap(p.doc, width=100, initial_indent="    ", subsequent_indent="    ")
        return textwrap.indent("\n".join(lines), indent)

    def init_problems(self, init: Callable) -> Iterator[str]:
        """What is wrong with ``init`` as ``__init__(self, *, name=default, ...)`` of exactly these parameters."""
        params = list(inspect.signature(init).parameters.values())[1:]             # after self
        names = [q.name for q in params]
        if names != list(self.names):
            yield f"takes {names}, but PARAMS declares {list(self.names)}"
            return
        for q in params:
            if q.kind is not q.KEYWORD_ONLY:
                yield f"{q.name} is not keyword-only"
            elif not _same_default(q.default, self[q.name].default):
                yield f"{q.name}'s default is {q.default!r}, but PARAMS declares {self[q.name].default!r}"


def _same_default(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


class Parametrized:
    """A learner whose ``PARAMS`` is checked against ``__init__`` and fills its docstring's ``{parameters}``."""

    PARAMS: ClassVar[ParamSpec] = ParamSpec([])

    def __init__(self):
        """No parameters (the empty ``PARAMS``)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "PARAMS" in cls.__dict__ or "__init__" in cls.__dict__:
            for problem in cls.PARAMS.init_problems(cls.__init__):
                raise TypeError(f"{cls.__qualname__}.__init__ does not match its PARAMS: {problem}")
        if cls.__doc__ and "{parameters}" in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace("{parameters}", cls.PARAMS.doc_section().strip())

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """The constructor parameters (``deep``: with ``name__key`` entries of nested estimators)."""
        out = {}
        for name in self.PARAMS.names:
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update({f"{name}__{k}": v for k, v in value.get_params().items()})
            out[name] = value
        return out

    def set_params(self, **params: Any) -> "Parametrized":
        """Set constructor parameters (``name__key`` for nested ones); ValueError for an unknown name. Returns self."""
        nested: Dict[str, Dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in self.PARAMS:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; its parameters are "
                                 f"{', '.join(self.PARAMS.names)}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            getattr(self, name).set_params(**sub)
        return self

    def check_params(self) -> None:
        """ValueError naming the first parameter whose value cannot work (what ``fit`` checks first)."""
        for message in self.PARAMS.problems(self.get_params(deep=False)):
            raise ValueError(f"{type(self).__name__}: {message}")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def positive_int(v) -> Optional[str]:
    return None if _is_int(v) and v >= 1 else "must be a positive integer"


def optional_positive_int(v) -> Optional[str]:
    return None if v is None or (_is_int(v) and v >= 1) else "must be a positive integer or None"


def positive_number(v) -> Optional[str]:
    finite = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))
    return None if finite and v > 0 else "must be a finite positive number"


def optional_int(v) -> Optional[str]:
    return None if v is None or _is_int(v) else "must be an integer or None"


def boolean(v) -> Optional[str]:
    return None if isinstance(v, (bool, np.bool_)) else "must be True or False"


def one_of(*choices) -> Callable[[Any], Optional[str]]:
    """A check that the value is one of ``choices``."""
    def check(v) -> Optional[str]:
        try:
            ok = any(v == c and type(v) is type(c) or v is c for c in choices)
        except (TypeError, ValueError):
            ok = False
        return None if ok else f"must be one of {', '.join(repr(c) for c in choices)}"
    return check
