"""Write the golden reference with the code of this checkout: ``python tests/golden/generate.py``.

Run it only with the code whose behaviour is the reference (the package before a refactor), or after a
change meant to move the models (say which, and why, in CHANGELOG.md) — never to make a failing golden test
pass. The models in ``saved_models/`` are not rewritten: they stay what an earlier version saved.
"""
import json
import os
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
    with tempfile.TemporaryDirectory() as tmp:
        ref = compute(Path(tmp))
    model_json = ref["mq-cli"].pop("model_json")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    (HERE / "reference.json").write_text(json.dumps(dict(commit=commit, cases=ref, mq_cli_model_json=model_json),
                                                    indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
