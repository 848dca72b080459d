"""Make the shared helpers (`mm_harness.py`) importable: pytest runs with --import-mode=importlib."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
