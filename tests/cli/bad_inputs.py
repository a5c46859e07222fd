"""The command line's bad inputs, one row each: the files a case writes, the command, the exit status and a
fragment of what stderr says. ``test_bad_inputs.py`` runs every row and checks that docs/cli.md's bad-input
table lists the same cases with the same fragments; a new case is one row here and one in the docs.

In ``argv`` and ``stderr``, ``{tmp}`` is the case's folder, ``{train}``/``{test}`` the examples' LETOR files and
``{model}`` a model trained on ``{train}``; ``files`` are written into ``{tmp}`` first (a value of None makes
a folder; ``setup`` edits ``{model}``'s copy in ``{tmp}/model``). ``message`` is the fragment the docs quote
(no paths); ``stderr`` more that the case's one line must hold.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

LINE = "1 qid:1 1:0.5 2:0.1 #docid = a\n0 qid:1 1:0.1 2:0.7 #docid = b\n"


@dataclass(frozen=True)
class Case:
    id: str
    argv: List[str]
    code: int
    message: str
    stderr: str = ""
    files: Dict[str, Optional[str]] = field(default_factory=dict)
    setup: Optional[Callable] = None


def _edit_model(change):
    """A ``setup`` that applies ``change(doc)`` to ``{tmp}/model/model.json``."""
    def setup(model_dir):
        path = model_dir / "model.json"
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))
    return setup


CASES = [
    # ---------------------------------------------------------------- file contents
    Case("qid-in-two-files", ["learn", "-c", "1", "{tmp}/a.txt", "{tmp}/b.txt", "{tmp}/m"], 2,
         "qids are in both: files read together are one set of queries",
         stderr="qid 1 is in {tmp}/a.txt (line 1) and in {tmp}/b.txt (line 1); 1 qids are in both",
         files={"a.txt": LINE, "b.txt": LINE}),
    Case("bad-line", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2, "expected 'index:value' pairs",
         stderr="{tmp}/f.txt:2:", files={"f.txt": "1 qid:1 1:0.5\n0 qid:1 1:zz\n"}),
    Case("no-qid", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2, "expected 'qid:<integer>' after the label",
         files={"f.txt": "1 1:0.5\n"}),
    Case("nan-feature", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2, "is nan: values must be finite numbers",
         files={"f.txt": "1 qid:1 1:nan\n"}),
    Case("empty-file", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2, "no data lines", files={"f.txt": "# nothing\n"}),
    Case("huge-feature-index", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2,
         "is above the limit of 100,000 features", stderr="or give --max-features N",
         files={"f.txt": "1 qid:1 1:0.5 1000000000:1\n0 qid:1 1:0.1\n"}),
    Case("feature-index-above-max-features", ["learn", "--max-features", "1", "{tmp}/f.txt", "{tmp}/m"], 2,
         "is above the limit of 1 features", stderr="{tmp}/f.txt:1: feature index 2", files={"f.txt": LINE}),
    Case("letor-huge-feature-index", ["letor", "{tmp}", "--learners", "adarank-grid", "--no-warm-up"], 2,
         "is above the limit of 100,000 features", stderr="{tmp}/Fold1/test.txt:1: feature index 1000000000",  # and no option to raise it
         files={"Fold1": None, "Fold1/train.txt": LINE, "Fold1/vali.txt": LINE,
                "Fold1/test.txt": "1 qid:1 1:0.5 1000000000:1\n"}),
    Case("no-usable-query", ["learn", "{tmp}/f.txt", "{tmp}/m"], 2,
         "no training query has both a relevant and a non-relevant candidate",
         files={"f.txt": "0 qid:1 1:0.5\n0 qid:1 1:0.6\n"}),
    Case("negative-label", ["learn", "-v", "0", "{tmp}/f.txt", "{tmp}/m"], 0,
         "lines have negative labels", stderr="1 lines have negative labels (e.g. -1 at {tmp}/f.txt:3); they count as 0",
         files={"f.txt": LINE + "-1 qid:1 1:0.2 2:0.2 #docid = c\n"}),
    Case("fractional-label", ["learn", "-v", "0", "{tmp}/f.txt", "{tmp}/m"], 0,
         "lines have fractional labels", stderr="(e.g. 0.5 at {tmp}/f.txt:3); labels are relevance grades 0, 1, 2",
         files={"f.txt": LINE + "0.5 qid:1 1:0.2 2:0.2 #docid = c\n"}),
    Case("trec-without-docid", ["classify", "--trec", "{tmp}/f.txt", "{model}", "{tmp}/run"], 2,
         "no '#docid = X' comment; --trec names each document by its line's docid",
         stderr="{tmp}/f.txt:1:", files={"f.txt": "1 qid:1 1:0.5\n"}),
    Case("trec-docid-twice", ["classify", "--trec", "{tmp}/f.txt", "{model}", "{tmp}/run"], 2,
         "is in qid 1 twice", files={"f.txt": "1 qid:1 1:0.5 #docid = a\n0 qid:1 1:0.2 #docid = a\n"}),
    Case("wider-than-model", ["classify", "{tmp}/f.txt", "{model}", "{tmp}/p"], 2,
         "uses feature index 9 but the model has 5 features", files={"f.txt": "1 qid:1 1:0.5 9:1\n"}),
    # ---------------------------------------------------------------- flags
    Case("c-empty", ["learn", "-c", "", "{train}", "{tmp}/m"], 2,
         "argument -c: expected a number, comma-separated numbers or auto"),
    Case("c-comma", ["learn", "-c", ",", "{train}", "{tmp}/m"], 2,
         "argument -c: expected a number, comma-separated numbers or auto"),
    Case("c-negative", ["learn", "-c", "-1", "{train}", "{tmp}/m"], 2, "C must be a positive number"),
    Case("unknown-loss", ["learn", "--loss", "nope", "{train}", "{tmp}/m"], 2, "unknown loss"),
    Case("unknown-option", ["learn", "--nope", "{train}", "{tmp}/m"], 2, "unrecognized arguments: --nope"),
    Case("jobs-zero", ["learn", "-j", "0", "{train}", "{tmp}/m"], 2,
         "argument -j/--jobs: expected a non-zero number of threads"),
    Case("max-features-zero", ["learn", "--max-features", "0", "{train}", "{tmp}/m"], 2,
         "argument --max-features: expected a positive integer"),
    Case("slack-rescaling", ["learn", "-o", "1", "{train}", "{tmp}/m"], 2, "(slack rescaling) is not implemented"),
    Case("workers-zero", ["learn", "--workers", "0", "{train}", "{tmp}/m"], 2, "--workers must be at least 1"),
    Case("scratch-not-a-folder", ["learn", "--scratch", "{tmp}/nope", "{train}", "{tmp}/m"], 2,
         "not a directory; give an existing folder with room for the data", stderr="--scratch {tmp}/nope:"),
    Case("scratch-with-workers", ["learn", "--scratch", "{tmp}", "--workers", "2", "{train}", "{tmp}/m"], 2,
         "--scratch reads TRAIN in this process; with --workers/--scheduler each file is a shard"),
    Case("letor-folds", ["letor", "{tmp}", "--folds", "x"], 2, "argument --folds: expected comma-separated fold numbers"),
    # ---------------------------------------------------------------- paths
    Case("train-missing", ["learn", "{tmp}/missing.txt", "{tmp}/m"], 2, "not found"),
    Case("model-under-a-file", ["learn", "{tmp}/f.txt", "{tmp}/f.txt/m"], 2,
         "is a file, not a folder; give a path in a folder", stderr="cannot write MODEL {tmp}/f.txt/m",
         files={"f.txt": "1 qid:1 1:zz\n"}),        # the path is checked before the bad line is read
    Case("model-is-a-file", ["learn", "{train}", "{tmp}/f.txt"], 2, "is an existing file; a model is a directory",
         files={"f.txt": "x"}),
    Case("model-in-a-folder-of-other-files", ["learn", "{train}", "{tmp}/notes"], 2,
         "holds other files but no model; give a new directory, an existing model directory to replace, or --force",
         files={"notes": None, "notes/keep.txt": "mine"}),
    Case("predictions-under-a-file", ["classify", "{test}", "{model}", "{tmp}/f.txt/p"], 2,
         "is a file, not a folder", stderr="cannot write PREDICTIONS {tmp}/f.txt/p", files={"f.txt": "x"}),
    Case("model-missing", ["classify", "{test}", "{tmp}/nothing", "{tmp}/p"], 2, "not found"),
    # ---------------------------------------------------------------- model files
    Case("model-params-edited", ["classify", "{test}", "{tmp}/model", "{tmp}/p"], 2,
         "params.features is 'bins' but state.params.features is 'raw'", stderr="{tmp}/model/model.json: ",
         setup=_edit_model(lambda doc: doc["params"].update(features="bins"))),
    Case("model-tie-function", ["classify", "{test}", "{tmp}/model", "{tmp}/p"], 2,
         "state.tie_function: is 99, not the index of one of the 5 base functions",
         setup=_edit_model(lambda doc: doc["state"].update(tie_function=99))),
]

#: cases of the docs' table that need a process of their own, tested in test_bad_inputs.py by name
SEPARATE = ("interrupted", "model-folder-not-writable")
