"""Schedule names: how the fibers of a block are interleaved and when cp.async copies land.

Why several: no single interleaving exposes every bug. A name is `<cp><mode>-<order>`:
  - cp: `L` lazy (copies happen at kc_cp_async_wait: a missing or short wait reads stale data) or
    `E` eager (copies happen at issue: a refill racing with readers shows up);
  - mode: `R` round-robin (warps advance in near-lockstep) or `G` greedy (the earliest runnable
    thread always runs, so one warp races ahead to the next __syncthreads, as a fast warp can);
  - order: `fwd`, `rev` or `rnd` (`rnd:SEED` for another seed) — the thread order within a block,
    which is also the block order within the grid.
`LR-fwd` plus `EG-fwd` caught every bug of the injection matrix in docs CPU-RUNTIME.md §2b; the
default set adds a random and a reverse order.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SCHEDULES = ("LR-fwd", "LR-rnd", "EG-fwd", "EG-rev")
ORDERS = {"fwd": 0, "rev": 1, "rnd": 2}
DEFAULT_SEED = 0x5EED


@dataclass(frozen=True)
class Schedule:
    cp_eager: bool
    greedy: bool
    order: int
    seed: int


def parse_schedule(name: str) -> Schedule:
    """'EG-rnd:7' -> Schedule(cp_eager=True, greedy=True, order=2, seed=7); ValueError if bad."""
    head, _, tail = name.partition("-")
    order, _, seed = tail.partition(":")
    if len(head) != 2 or head[0] not in "LE" or head[1] not in "RG" or order not in ORDERS:
        raise ValueError(
            f"bad schedule {name!r}: expected [L|E][R|G]-[fwd|rev|rnd[:SEED]], e.g. 'LR-fwd'"
        )
    if seed and order != "rnd":
        raise ValueError(f"bad schedule {name!r}: only 'rnd' takes a seed")
    return Schedule(head[0] == "E", head[1] == "G", ORDERS[order],
                    int(seed) if seed else DEFAULT_SEED)
