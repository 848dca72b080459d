"""The fused inference fast path of nn.MultiheadAttention / nn.TransformerEncoderLayer, which
Dynamo takes under no_grad: deplo's decompositions (frontend/fast_path.py) against the fused
ops themselves, then whole modules through torch.compile(backend="deplo") against eager."""

from __future__ import annotations

import math

import pytest
import torch

from deplo.frontend.fast_path import native_multi_head_attention, transformer_encoder_layer_fwd

B, L, E, H, FF = 2, 5, 8, 2, 16


def _masks():
    torch.manual_seed(1)
    pad = torch.rand(B, L) > 0.6
    pad[:, 0] = False
    causal = torch.ones(L, L, dtype=torch.bool).triu(1)
    return {"none": (None, None), "key_padding": (pad, 1),
            "key_padding_float": (torch.zeros(B, L).masked_fill(pad, -math.inf), 1),
            "attn": (causal, 0), "attn_float": (torch.zeros(L, L).masked_fill(causal, -math.inf), 0),
            "merged": (causal | pad.view(B, 1, 1, L).expand(B, H, L, L), 2)}


@pytest.mark.parametrize("mask", list(_masks()))
@pytest.mark.parametrize("norm_first,gelu", [(True, True), (False, False)])
def test_decompositions_equal_the_fused_ops(mask, norm_first, gelu) -> None:
    torch.manual_seed(0)
    m, kind = _masks()[mask]
    x = torch.randn(B, L, E)
    w = [torch.randn(*s) for s in [(3 * E, E), (3 * E,), (E, E), (E,)]]
    norms = [torch.randn(E) for _ in range(4)]
    ffn = [torch.randn(*s) for s in [(FF, E), (FF,), (E, FF), (E,)]]
    args = (x, E, H, *w, gelu, norm_first, 1e-5, *norms, *ffn, m, kind)
    torch.testing.assert_close(transformer_encoder_layer_fwd(*args),
                               torch._transformer_encoder_layer_fwd(*args), rtol=1e-5, atol=1e-5)
    for need, average in [(True, True), (True, False), (False, True)]:
        mha = (x, x, x, E, H, *w, m, need, average, kind)
        want, got = torch._native_multi_head_attention(*mha), native_multi_head_attention(*mha)
        torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
        assert (got[1] is None) == (want[1] is None)
        if need:
            torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-6)


@pytest.fixture
def cpu_target(monkeypatch):
    monkeypatch.setenv("DEPLO_TARGET", "cpu")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_encoder_layer_and_attention_through_torch_compile(cpu_target) -> None:
    """ViT/BERT-style inference: under no_grad Dynamo records the fused ops, which now convert."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 32)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[0, 4:] = True
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu",
                                             batch_first=True, norm_first=True).eval()
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    with torch.no_grad():
        for model, args, kw in [(layer, (x,), {"src_key_padding_mask": pad}),
                                (mha, (x, x, x), {"key_padding_mask": pad})]:
            want = model(*args, **kw)
            got = torch.compile(model, backend="deplo")(*args, **kw)
            for g, w in zip(*[(t,) if isinstance(t, torch.Tensor) else t for t in (got, want)]):
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_a_padded_encoder_stack_checks_against_the_traced_ops() -> None:
    """Under no_grad eager runs nn.TransformerEncoder with a padding mask on nested tensors,
    zeros at the padded positions; --check's reference runs under a torch function mode, which
    turns that path off: the traced ops, as deplo (and torch.compile) compute them."""
    import deplo

    torch.manual_seed(0)
    x, pad = torch.randn(2, 6, 16), torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    stack = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        16, 4, 32, batch_first=True), 2, enable_nested_tensor=True).eval()
    c = deplo.compile(lambda a, p: stack(a, src_key_padding_mask=p), [x, pad])
    inputs = [x.numpy(), pad.numpy()]  # (padding at the end: what the nested path takes)
    assert c.judge(c.run(inputs + c.program.params), inputs).ok
    assert torch.backends.mha.get_fastpath_enabled()  # (and back on after)
