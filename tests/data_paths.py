"""Where the tests' data lives: the repository's examples and the shared collections beside the clone
(``../shared/data``). Tests take them as the fixtures of ``tests/conftest.py`` (which skip when a shared
collection is absent); the constants are for what is needed at collection time (parameter lists)."""
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLES = REPOSITORY / "examples"
#: the two small LETOR files of the examples
LETOR_TRAIN, LETOR_TEST = EXAMPLES / "letor_train.txt", EXAMPLES / "letor_test.txt"
SHARED_DATA = REPOSITORY.parent / "shared" / "data"
VASWANI = SHARED_DATA / "vaswani"
MQ2008 = SHARED_DATA / "letor" / "MQ2008"
