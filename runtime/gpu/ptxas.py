"""Parse the `ptxas -v` resource report that NVRTC appends to its program log.

Why: registers, shared memory and spills decide occupancy; the tuner and the tests read them
from here instead of re-running ptxas. One kernel's block of the log looks like:

    ptxas info    : Compiling entry function 'block_sum' for 'sm_90'
    ptxas info    : Function properties for block_sum
    ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 25 registers, used 1 barriers, 1024 bytes smem
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


@dataclass(frozen=True)
class PtxasReport:
    """Resource usage of one entry function, as ptxas printed it (smem is static smem only)."""

    registers: int = 0
    barriers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


def parse_ptxas_log(log: str) -> dict[str, PtxasReport]:
    """Entry function name -> PtxasReport, for every `Compiling entry function` in the log."""
    fields: dict[str, dict[str, int]] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    entry: str | None = None
    props: str | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry = m.group(1)
            fields.setdefault(entry, {})
        elif m := _PROPS.search(line):
            props = m.group(1)
        elif (m := _FRAME.search(line)) and props is not None:
            frames[props] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and entry is not None:
            f = fields[entry]
            f["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                f["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                f["smem_bytes"] = int(s.group(1))
    reports = {}
    for name, f in fields.items():
        stack, stores, loads = frames.get(name, (0, 0, 0))
        reports[name] = PtxasReport(stack_bytes=stack, spill_stores=stores, spill_loads=loads, **f)
    return reports
