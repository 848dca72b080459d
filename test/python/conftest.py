"""Make the shared helpers of test/python (test_cli's `run`) importable by the tests beside and
below it: pytest runs with --import-mode=importlib."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
