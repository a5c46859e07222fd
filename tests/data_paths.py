"""Where the tests' data lives: the repository's examples and the shared collections beside the clone
(``../shared/data``; the tests that need them are skipped when it is absent)."""
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLES = REPOSITORY / "examples"
#: the two small LETOR files of the examples
LETOR_TRAIN, LETOR_TEST = EXAMPLES / "letor_train.txt", EXAMPLES / "letor_test.txt"
SHARED_DATA = REPOSITORY.parent / "shared" / "data"
VASWANI = SHARED_DATA / "vaswani"
MQ2008 = SHARED_DATA / "letor" / "MQ2008"
