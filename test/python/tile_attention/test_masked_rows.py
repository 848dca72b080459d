"""A query row its attention mask hides whole is 0 in PyTorch (its safe softmax; a padded batch's
pad rows), at every level: a boolean mask's False is -inf, the softmax clamps its max to the
lowest float and its sum to at least 1 (torch_to_tir.softmax's `safe`), and the flash kernels
keep that (loop-online-softmax's running max starts at the lowest float; ragged keys weigh 0).
An additive mask of finite lowest values (transformers') gives the mean of V, as PyTorch does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo

LEVELS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]


def _qkvm(kind: str, dtype=torch.float32, L: int = 5, S: int = 6, E: int = 8):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, E, generator=g).to(dtype) for n in (L, S, S))
    hidden = torch.zeros(L, S, dtype=torch.bool)
    hidden[2], hidden[0, : S // 2] = True, True  # row 2 whole, row 0 in part
    if kind == "bool":
        m = ~hidden
    elif kind == "float-inf":
        m = torch.zeros(L, S, dtype=dtype).masked_fill(hidden, -float("inf"))
    else:  # transformers' additive mask
        m = torch.zeros(L, S, dtype=dtype).masked_fill(hidden, torch.finfo(dtype).min)
    return q, k, v, m


def _sdpa(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


def _flash(c) -> bool:
    return [p["kind"] for p in c.plans()["kernels"].values()] == ["attention"]


@pytest.mark.parametrize("target,level", LEVELS)
@pytest.mark.parametrize("kind", ["bool", "float-inf", "finite-lowest"])
def test_rows_masked_whole(kind, target, level) -> None:
    args = _qkvm(kind)
    c = deplo.compile(_sdpa, list(args))
    assert _flash(c)  # one flash-attention kernel, the mask read inside it
    ref = _sdpa(*args).numpy()
    if kind == "finite-lowest":
        np.testing.assert_allclose(ref[:, :, 2], args[2].numpy().mean(2), rtol=1e-5, atol=1e-6)
    else:
        assert (ref[:, :, 2] == 0).all()
    got = c.run([t.numpy() for t in args], target=target, level=level)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("knobs", [{"key_splits": 2, "lane_keys": 1, "threads": 8, "rows": 4},
                                   {"key_splits": 1}])
def test_rows_masked_whole_under_pinned_plans(knobs) -> None:
    """Key slices (a slice whose keys are all hidden combines with weight 0) and ragged steps
    of 32 lanes over 40 keys (the lanes past the end are -inf too)."""
    args = _qkvm("bool", L=6, S=40, E=16)
    c = deplo.compile(_sdpa, list(args))
    (key,) = c.plans()["kernels"]
    plan = c.plans()
    plan["kernels"][key]["knobs"].update(knobs)
    c = deplo.compile(_sdpa, list(args), schedule=plan)
    got = c.run([t.numpy() for t in args], target="cpu")[0]
    ref = _sdpa(*args).numpy()
    assert (got[:, :, 2] == 0).all()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["bool", "float-inf"])
def test_rows_masked_whole_on_tensor_cores(kind) -> None:
    """bf16 (mma.sync flash kernel, keys in steps of 32 over 40: a ragged last step)."""
    args = _qkvm(kind, torch.bfloat16, L=32, S=40, E=16)
    c = deplo.compile(_sdpa, list(args))
    (plan,) = c.plans()["kernels"].values()
    assert plan["kind"] == "attention" and plan["knobs"]["mma"]
    assert c.check(seed=1).ok
    got = c.run([t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy() for t in args],
                target="cpu")[0]
    assert (np.asarray(got, dtype=np.float32)[:, :, 2] == 0).all()
