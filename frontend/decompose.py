"""PyTorch's own decompositions for the ATen ops deplo has no converter for.

torch.export keeps composite ops whole (`einsum`, `cross_entropy_loss`, `hardswish`, `pad`,
`interpolate`'s upsampling). Rather than write each by hand, a program that holds one is rerun
through `run_decompositions` with one table: every decomposition PyTorch has for an op deplo
does not convert — `torch.export.default_decompositions()` (core ATen decompositions and the
CompositeImplicitAutograd kernels) first, then `torch._decomp.decomposition_table` (upsampling
into indexing, reflection padding, adaptive pooling). The table applies recursively while the
program is traced again, so one run takes `pad` to `reflection_pad2d` to indexing. deplo adds
its own for the two fused ops PyTorch gives none (frontend/fast_path.py), and uint8 bilinear /
bicubic resizes, which PyTorch's decompositions round differently from its kernel
(frontend/resample.py).

Ops deplo converts are left out of the table and stay whole (`linear` keeps its matmul's shape);
what is still without a converter after the run is the importer's error (frontend/importer.py
names the user's op, not what a decomposition left behind).
"""

from __future__ import annotations

import torch


def decompose_unsupported(ep: torch.export.ExportedProgram, converted, refused
                          ) -> torch.export.ExportedProgram:
    """`ep` with every op outside `converted` (and not `refused` on purpose) that PyTorch can
    decompose replaced by its decomposition."""
    from torch._decomp import decomposition_table

    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if op in converted or op in refused:
            del table[op]
    for op, fn in decomposition_table.items():
        if isinstance(op, torch._ops.OpOverload) and op not in converted and op not in refused \
                and op not in table and op.namespace == "aten":
            table[op] = fn
    from deplo.frontend.fast_path import DECOMPOSITIONS
    from deplo.frontend.resample import decompositions

    table.update({op: fn for op, fn in {**DECOMPOSITIONS, **decompositions()}.items()
                  if op not in converted})
    return ep.run_decompositions(table)
