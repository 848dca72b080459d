"""One decode step of a causal LM with a KV cache, captured once for a maximum context.

    step = capture_decode_step("./tiny-llama", max_context=64)
    # inputs: ids [1,1], position [1,1], mask [1,1,1,C+1], then per layer k, v [1,kv_heads,C,d]
    # outputs: logits [1,1,V], then per layer the new k, v [1,kv_heads,1,d]

Why this shape: the cache slots and the current position are runtime inputs, so one program
serves every step (no recompilation per token). The model's own decoder layers run unchanged:
a cache object handed to them returns the past slots with the new key/value appended
(`torch.cat`), and an additive mask hides the slots not yet written; the host writes the new
key/value into slot `position` after the step. The rotary tables are computed in the program
from the position. Families whose model-level forward adds more than embed -> layers -> norm ->
head (Gemma's embedding scale, Granite's multipliers) are refused; generation then uses the
full-context program.
"""

from __future__ import annotations

import torch

from deplo.frontend.errors import FrontendError
from deplo.frontend.importer import Program, import_module
from deplo.frontend.models import build_model, resolve_model

FAMILIES = ("llama", "qwen2", "mistral", "qwen3")


class _StepCache:
    """What a decoder layer's attention sees as its cache: past slots + this step's key/value."""

    def __init__(self, past: list[tuple[torch.Tensor, torch.Tensor]]):
        self.past, self.new = past, []

    def update(self, key, value, layer_idx, *args, **kwargs):
        past_k, past_v = self.past[layer_idx]
        self.new.append((key, value))
        return torch.cat([past_k, key], dim=2), torch.cat([past_v, value], dim=2)


class DecodeStep(torch.nn.Module):
    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.model, self.lm_head = lm.model, lm.lm_head

    def forward(self, ids, position, mask, *past):
        cache = _StepCache([(past[i], past[i + 1]) for i in range(0, len(past), 2)])
        h = self.model.embed_tokens(ids)
        cos_sin = self.model.rotary_emb(h, position)
        for layer in self.model.layers:
            out = layer(h, attention_mask=mask, position_ids=position, cache=cache,
                        position_embeddings=cos_sin, use_cache=True)
            h = out[0] if isinstance(out, tuple) else out
        logits = self.lm_head(self.model.norm(h))
        return (logits, *[t for kv in cache.new for t in kv])


def cache_shape(config, max_context: int) -> tuple[int, int, int, int]:
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return (1, getattr(config, "num_key_value_heads", None) or heads, max_context, head_dim)


def attention_window(config) -> int | None:
    """The sliding window every layer attends within (None: the whole past). FrontendError
    where layers mix sliding and full attention (one mask serves every layer here)."""
    types = set(getattr(config, "layer_types", None) or ())
    if types == {"full_attention"}:
        return None
    if types - {"sliding_attention"}:
        raise FrontendError("its layers mix sliding-window and full attention (one mask "
                            "serves every layer of the KV-cache step)")
    return getattr(config, "sliding_window", None)  # Mistral: every layer, where set


def step_mask(position: int, max_context: int, dtype: torch.dtype,
              window: int | None = None) -> torch.Tensor:
    """0 for the written slots a query at `position` sees (the last `window` - 1 of them, or
    all) and for the new key (the last), the dtype's lowest value elsewhere."""
    mask = torch.full((1, 1, 1, max_context + 1), torch.finfo(dtype).min, dtype=dtype)
    first = 0 if window is None else max(0, position - window + 1)
    mask[..., first:position] = 0
    mask[..., -1] = 0
    return mask


def capture_decode_step(spec: str, max_context: int, *, seed: int = 0,
                        dtype: torch.dtype = torch.float32) -> Program:
    source = resolve_model(spec)
    model = build_model(source, device="cpu", seed=seed, dtype=dtype)
    kind = model.config.model_type
    if kind not in FAMILIES:
        raise FrontendError(f"model type {kind!r}: no KV-cache decode step (supported: "
                            f"{', '.join(FAMILIES)})")
    attention_window(model.config)
    model.config._attn_implementation = "sdpa"
    gen = torch.Generator().manual_seed(seed)
    shape = cache_shape(model.config, max_context)
    past = [torch.randn(shape, generator=gen).to(dtype)
            for _ in range(2 * model.config.num_hidden_layers)]  # k0, v0, k1, v1, ...
    example = [torch.tensor([[1]]), torch.tensor([[max_context // 2]]),
               step_mask(max_context // 2, max_context, dtype), *past]
    names = ["ids", "position", "mask"] + [f"{kv}{i}" for i in range(len(past) // 2)
                                           for kv in ("k", "v")]
    program = import_module(DecodeStep(model).eval(), example, names)
    program.example_inputs = [t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
                              for t in example]
    return program
