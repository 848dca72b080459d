"""Shared setup for the CPU-runtime tests: one BLAS thread (the box has ~1 core of throughput),
and skip everything where kcpu cannot run (no g++, not x86-64)."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from deplo.runtime.cpu import cpu_runtime_available

_OK, _WHY = cpu_runtime_available()


def pytest_collection_modifyitems(config, items):
    if _OK:
        return
    skip = pytest.mark.skip(reason=f"CPU runtime unavailable: {_WHY}")
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(skip)
