"""Write the golden references with the code installed now: ``python tests/golden/generate.py``.

Run it only with the code whose behaviour is the reference (the package before a refactor), never to make
a failing golden test pass.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cases import REFERENCE_BLAS_CORE, REFERENCE_BLAS_THREADS, THREAD_VARIABLES, compute  # noqa: E402


def main() -> None:
    wanted = dict(OPENBLAS_CORETYPE=REFERENCE_BLAS_CORE, OPENBLAS_NUM_THREADS=REFERENCE_BLAS_THREADS)
    if any(os.environ.get(k) != v for k, v in wanted.items()):     # numpy is loaded: start again with the BLAS
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
        os.execve(sys.executable, [sys.executable, __file__], dict(env, **wanted))
    models = HERE / "models"
    shutil.rmtree(models, ignore_errors=True)
    models.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        ref = compute(Path(tmp), saved_models=models)
    ref["mq-cli"].pop("model_json")  # the reference is models/mq-cli/model.json itself
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    (HERE / "reference.json").write_text(json.dumps(dict(commit=commit, cases=ref), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
