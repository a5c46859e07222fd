"""Packaging for pyterrier-svmmap."""
import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
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
    entry_points={
        "console_scripts": ["svmmap=pyterrier_svmmap.cli:main"],
        "pyterrier.artifact": ["learned_ranker.svmmap = pyterrier_svmmap.io.model_files:load_artifact"],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Information Analysis",
    ],
)
