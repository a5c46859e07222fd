"""Warnings attributed to the user's line: the first caller outside this package and PyTerrier."""
from __future__ import annotations

import os
import sys
import warnings
from typing import Type

#: the packages whose frames a warning skips (PyTerrier only when it is imported: otherwise it has none)
LIBRARIES = ("pyterrier_svmmap", "pyterrier")


def warn(message: str, category: Type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside :data:`LIBRARIES`."""
    folders = tuple(os.path.dirname(os.path.abspath(file)) + os.sep for file in
                    (getattr(sys.modules.get(name), "__file__", None) for name in LIBRARIES) if file)
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(folders):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
