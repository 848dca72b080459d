"""nn.EmbeddingBag / F.embedding_bag (aten._embedding_bag): bags by offsets (a 2-D input's
rows), sum / mean / max, per-sample weights, include_last_offset, padding_idx, empty bags, and
the bookkeeping outputs of mean and max — against PyTorch at every level: the numpy interpreters
at torch and loop IR, and the emitted .cu on the CPU runtime. A DLRM-style model (bags, an
interaction by bmm and triu_indices) end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo

LEVELS = [("interp", "torch"), ("interp", "loop"), ("cpu", None)]
W = torch.randn(10, 3, generator=torch.Generator().manual_seed(0))
IDX, OFFSETS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 4])  # bag 1 is empty


def _bag(mode: str, **kw):
    return torch.nn.EmbeddingBag(10, 3, mode=mode, **kw).eval()


CASES = {
    "sum_of_rows": (_bag("sum"), [torch.randint(0, 10, (4, 5))]),
    "mean_offsets": (lambda i, o: F.embedding_bag(i, W, o, mode="mean"), [IDX, OFFSETS]),
    "max_offsets": (lambda i, o: F.embedding_bag(i, W, o, mode="max"), [IDX, OFFSETS]),
    "weighted_last_offset": (
        lambda i, o, p: F.embedding_bag(i, W, o, mode="sum", per_sample_weights=p,
                                        include_last_offset=True),
        [IDX, torch.tensor([0, 3, 3, 8]), torch.rand(8)]),
    "padding_idx_mean": (_bag("mean", padding_idx=2), [torch.tensor([[2, 2, 1], [3, 2, 4]])]),
    "bookkeeping_max": (lambda i, o: torch.ops.aten._embedding_bag(
        W, i, o, False, 2, False, None, False, -1), [IDX, OFFSETS]),
    "max_nan_wins_only_first": (  # aten keeps a greater value: NaN only as a bag's first
        lambda i, o: F.embedding_bag(i, torch.where(torch.arange(30).reshape(10, 3) % 7 == 2,
                                                    float("nan"), W), o, mode="max"),
        [torch.tensor([1, 2, 4, 0, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 5])]),
    "bookkeeping_mean": (lambda i, o: torch.ops.aten._embedding_bag(
        W, i, o, False, 1, False, None, False, -1), [IDX, OFFSETS]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_embedding_bag(name) -> None:
    fn, args = CASES[name]
    c = deplo.compile(fn, args)
    ref = fn(*args)
    ref = ref if isinstance(ref, tuple) else (ref,)
    inputs = [a.numpy() for a in args] + list(c.program.params)
    for target, level in LEVELS:
        got = c.run(inputs, target=target, level=level)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(np.asarray(g), r.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{target} {level}")


def test_dlrm_style_model() -> None:
    class Dlrm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = torch.nn.Sequential(torch.nn.Linear(13, 8), torch.nn.ReLU())
            self.bags = torch.nn.ModuleList(torch.nn.EmbeddingBag(n, 8) for n in (11, 23, 7))
            self.top = torch.nn.Sequential(torch.nn.Linear(8 + 6, 1), torch.nn.Sigmoid())

        def forward(self, dense, sparse):
            x = self.bottom(dense)
            t = torch.stack([x] + [b(sparse[:, k]) for k, b in enumerate(self.bags)], 1)
            z = torch.bmm(t, t.transpose(1, 2))
            i, j = torch.triu_indices(4, 4, 1)
            return self.top(torch.cat([x, z[:, i, j]], 1))

    c = deplo.compile(Dlrm().eval(), [torch.randn(3, 13), torch.randint(0, 7, (3, 3, 4))])
    assert c.check(seed=1).ok
