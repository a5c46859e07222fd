"""Warnings that point at the user's line: the package's warnings are raised deep inside it (a fit's input
checks, the solver's data), where ``warnings.warn``'s fixed ``stacklevel`` would name a library line that
depends on the path taken. :func:`warn` counts the frames instead: the warning is attributed to the first
caller outside this package and PyTerrier (whose pipelines call the estimators' ``fit``), i.e. the line of
the user's ``fit()``, ``transform()`` or pipeline call.
"""
from __future__ import annotations

import os
import sys
from typing import Tuple, Type
import warnings

#: the packages whose frames a warning skips (PyTerrier only when it is imported: otherwise it has none)
LIBRARIES = ("pyterrier_svmmap", "pyterrier")


def _library_folders() -> Tuple[str, ...]:
    folders = []
    for name in LIBRARIES:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            folders.append(os.path.dirname(os.path.abspath(file)) + os.sep)
    return tuple(folders)


def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` call in the caller of this function that attributes the
    warning to the first frame outside the libraries (:data:`LIBRARIES`).

    Returns
    -------
    int
        The stack level: 1 for the caller itself, one more for each library frame above it.
    """
    folders = _library_folders()
    frame = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(folders):
        frame = frame.f_back
        level += 1
    return level


def warn(message: str, category: Type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line (:func:`user_stacklevel`).

    Parameters
    ----------
    message : str
        The warning's text.
    category : type, default UserWarning
        The warning's class.
    """
    warnings.warn(message, category, stacklevel=user_stacklevel())
