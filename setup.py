"""Packaging for pyterrier-svmmap."""
import os
import re
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
#: compiles (and caches) the kernels of a default fit, its predictions and the svmlight parser, in the built
#: package's ``__pycache__`` folders (``svmmap warm-up`` compiles every learner's)
WARM_UP = "from pyterrier_svmmap.cli.warm_up import warm_up; warm_up(every_learner=False)"


class BuildPyCompiled(build_py):
    """``build_py``, then, for a wheel, the numba kernels of a default fit (:data:`WARM_UP`) compiled into the built
    package, where numba caches an installed package's kernels. A wheel installs them valid: numba's cache index
    (0.68 on) names a source file by its content and a kernel by its bytecode, this machine's CPU and numba's
    version, so a first fit after ``pip install`` loads the kernels instead of compiling them (about 30 s). With
    another CPU or numba, or ``NUMBA_CACHE_DIR`` set, numba compiles them on first use as without them.
    ``PYTERRIER_SVMMAP_PRECOMPILE=0`` leaves them out; a failed compile warns and leaves them out."""

    def run(self):
        super().run()
        lib = Path(self.build_lib).resolve()
        for stale in lib.glob("pyterrier_svmmap/**/__pycache__/*.nb[ic]"):     # an earlier build's
            stale.unlink()
        if self.editable_mode or os.environ.get("PYTERRIER_SVMMAP_PRECOMPILE") == "0":
            return
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(lib), os.environ.get("PYTHONPATH")])),
                   PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", WARM_UP], cwd=lib, env=env, capture_output=True, text=True)
        if done.returncode:
            self.warn("kernels not compiled into the wheel (they compile on first use): "
                      + " ".join(done.stderr.strip().splitlines()[-1:]))


VERSION = re.search(r'__version__ = "([^"]+)"', (HERE / "pyterrier_svmmap" / "_version.py").read_text()).group(1)

setup(
    name="pyterrier-svmmap",
    version=VERSION,
    description="SVM-map and structural-SVM learning to rank for IR measures, as PyTerrier transformers",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["pyterrier_svmmap", "pyterrier_svmmap.*"]),
    python_requires=">=3.10",
    install_requires=[
        "python-terrier>=1.0",
        "numpy>=1.24",
        "scipy>=1.10",
        "pandas>=1.5",
        "ir-measures>=0.3",
        "tqdm>=4",
        "numba>=0.58",                                   # the compiled kernels: most of the speed
    ],
    extras_require={
        "pisa": ["pyterrier-pisa>=0.4"],
        "plot": ["matplotlib>=3.6"],
        "peers": ["lightgbm>=4.0", "scikit-learn>=1.0"],   # LightGBM's ranker API needs scikit-learn
        "speed": [],                                    # numba is in install_requires; `[speed]` still installs
        "dask": ["dask[distributed]>=2024.1"],          # training and reproduce trials on a Dask cluster
        "test": ["pytest>=7", "hypothesis>=6", "pyterrier-pisa>=0.4", "lightgbm>=4.0", "scikit-learn>=1.0", "matplotlib>=3.6",
                 "dask[distributed]>=2024.1", "nbclient>=0.7", "nbformat>=5.7", "ipykernel>=6"],
    },
    cmdclass={"build_py": BuildPyCompiled},
    entry_points={
        "console_scripts": ["svmmap=pyterrier_svmmap.cli:main"],
        "pyterrier.artifact": ["learned_ranker.svmmap = pyterrier_svmmap.io.model_files:load_artifact"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Information Analysis",
    ],
)
