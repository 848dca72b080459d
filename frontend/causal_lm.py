"""Capture a Hugging Face causal LM (Llama, Qwen2, ...) as a Program.

    capture_model("Qwen/Qwen2.5-7B")                      # meta device: IR only, no weights
    capture_model("./tiny-llama", materialize=True)       # real weights, runnable and checkable
    capture_model("TinyLlama/...", layer=0)               # one decoder layer: hidden -> hidden
    capture_model(spec, num_layers=2)                     # the model truncated to 2 layers

The whole model is exported as `input_ids -> logits` (no KV cache). Shape-only work (the causal
mask, the rotary tables) is folded by the importer, and identical decoder layers are outlined into
one function called per layer (frontend/layers.py).
"""

from __future__ import annotations

import torch

from deplo.frontend.dtypes import to_numpy
from deplo.frontend.errors import FrontendError
from deplo.frontend.importer import Program, import_module
from deplo.frontend.models import build_model, hf_config, resolve_model


def logits_only(model: torch.nn.Module) -> torch.nn.Module:
    """The causal LM itself, its forward narrowed to input_ids -> logits without a cache: the
    function deplo compiles. Why not a wrapper module: a wrapper would prefix every weight's name,
    and the family's own forward (whatever its layout: model.layers, transformer.h,
    gpt_neox.layers, model.decoder.layers) finds its layers and head itself."""
    full = type(model).forward

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return full(self, input_ids=input_ids, use_cache=False).logits

    model.forward = forward.__get__(model)
    return model


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The ModuleList of the decoder layers, wherever the family keeps it."""
    n = model.config.num_hidden_layers
    for _, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) == n:
            return mod
    raise FrontendError(f"model type {model.config.model_type!r}: no list of {n} decoder layers")


class OneLayer(torch.nn.Module):
    """hidden -> hidden through decoder layer N (causal, positions 0..S-1)."""

    def __init__(self, model: torch.nn.Module, index: int):
        super().__init__()
        rotary = [m for name, m in model.named_modules() if name.endswith("rotary_emb")]
        if not rotary:
            raise FrontendError(f"--layer: a {model.config.model_type} layer takes no rotary "
                                "position embeddings; compile the model with --num-layers")
        self.layer = decoder_layers(model)[index]
        self.rotary_emb = rotary[0]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(hidden.shape[1], device=hidden.device).unsqueeze(0)
        cos_sin = self.rotary_emb(hidden, positions)
        out = self.layer(hidden, attention_mask=None, position_ids=positions,
                         position_embeddings=cos_sin, use_cache=False)
        return out[0] if isinstance(out, tuple) else out


def capture_model(spec: str, *, layer: int | None = None, num_layers: int | None = None,
                  seq_len: int = 8, materialize: bool = False, seed: int = 0,
                  dtype: torch.dtype = torch.float32) -> Program:
    """Resolve, build (meta unless `materialize`), export and import a causal LM."""
    source = resolve_model(spec)
    device = "cpu" if materialize else "meta"
    if layer is not None:
        total = hf_config(source).num_hidden_layers
        if not 0 <= layer < total:
            raise FrontendError(f"--layer {layer}: the model has {total} layers (0..{total - 1})")
        num_layers = layer + 1
    model = build_model(source, num_layers=num_layers, device=device, seed=seed, dtype=dtype)
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is not None and seq_len > positions:
        raise FrontendError(f"--seq-len {seq_len}: the model takes at most {positions} positions")
    decoder_layers(model)
    gen = torch.Generator().manual_seed(seed)
    if layer is not None:
        module = OneLayer(model, layer).eval()
        example = torch.randn(1, seq_len, model.config.hidden_size, generator=gen).to(dtype)
        names = ["hidden"]
    else:
        module = logits_only(model).eval()
        example = torch.randint(0, model.config.vocab_size, (1, seq_len), generator=gen)
        names = ["input_ids"]
    program = import_module(module, [example.to(device)], names)
    program.example_inputs = [to_numpy(example)]  # the CPU tensor, also for a meta capture
    program.notes.append(
        f"model {spec} from the {source.origin}"
        + ("" if source.has_weights or not materialize else "; no weights found: random weights")
    )
    return program
