"""The build backend: setuptools', with numba and scipy (numba's linear algebra) among a wheel's build
requirements, so that ``setup.py`` compiles the kernels into the wheel (unless
``PYTERRIER_SVMMAP_PRECOMPILE=0``); an editable install and a source distribution need neither."""
import os

from setuptools.build_meta import *  # noqa: F401,F403 (setuptools' hooks, one of them extended below)
from setuptools.build_meta import get_requires_for_build_wheel as _setuptools_wheel_requires


def get_requires_for_build_wheel(config_settings=None):
    compiling = os.environ.get("PYTERRIER_SVMMAP_PRECOMPILE") != "0"
    return _setuptools_wheel_requires(config_settings) + (["numba>=0.58", "scipy>=1.10"] if compiling else [])
