"""``python -m pyterrier_svmmap.cli``: the ``svmmap`` command."""
import sys

from pyterrier_svmmap.cli import main

sys.exit(main())
