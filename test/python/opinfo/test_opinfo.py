"""PyTorch's OpInfo samples for every op deplo claims (op_coverage.COVERAGE), fp32 and bf16, at
the interpreters (torch, tensor, loop) and as the `.cu` on the CPU runtime: each sample passes
or is refused at import for its documented reason. Then docs/ops.md must be the table these
results give (`python test/python/opinfo/op_coverage.py --write` regenerates it)."""

from __future__ import annotations

import pytest
from opinfo.op_coverage import (
    COVERAGE,
    DOC,
    DTYPES,
    check_sample,
    describe,
    samples,
    table,
)

from deplo.runtime.cpu import cpu_runtime_available

RESULTS: dict = {}
ENTRIES = {e.key: e for e in COVERAGE}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("key", ENTRIES)
def test_opinfo_samples(key: str, dtype: str) -> None:
    entry, failures, outcomes = ENTRIES[key], [], []
    for sample in samples(entry, DTYPES[dtype]):
        outcome = check_sample(entry, sample, DTYPES[dtype], cpu=cpu_runtime_available())
        if outcome.failure:
            failures.append(f"{describe(sample)}: {outcome.failure}")
        outcomes.append(outcome)
    RESULTS[(key, dtype)] = outcomes
    assert not failures, "\n".join(failures)


def test_coverage_table_is_current() -> None:
    if len(RESULTS) < len(ENTRIES) * len(DTYPES) or not cpu_runtime_available():
        pytest.skip("needs every OpInfo case of this run (and the CPU runtime)")
    assert DOC.read_text() == table(RESULTS), (
        "docs/ops.md is stale: python test/python/opinfo/op_coverage.py --write"
    )
