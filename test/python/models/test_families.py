"""Hugging Face causal-LM families from a local directory: whatever their layout (model.layers,
transformer.h, gpt_neox.layers, model.decoder.layers), head (lm_head, embed_out, tied) and
attention (SDPA, or eager where the family has no SDPA path), the logits match transformers' on
the interpreter and the CPU runtime, and identical layers are outlined once; a checkpoint missing a
tensor, a config value transformers does not know and weights past the memory are refused."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects import func

from deplo.frontend.causal_lm import capture_model
from deplo.runtime.cpu import cpu_runtime_available
from deplo.tools.api import Compiled

DECODER = {"hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2}


def _configs() -> dict:
    import transformers as T

    return {
        "mistral": T.MistralConfig(**DECODER),
        "qwen3": T.Qwen3Config(**DECODER, head_dim=16),
        "gemma": T.GemmaConfig(**DECODER, head_dim=16),
        "gemma2": T.Gemma2Config(**DECODER, head_dim=16),  # soft-capping, eager attention
        "phi3": T.Phi3Config(**DECODER, pad_token_id=0),
        "stablelm": T.StableLmConfig(**DECODER),
        "olmo": T.OlmoConfig(**DECODER),
        "gpt2": T.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=64),
        "gpt_neox": T.GPTNeoXConfig(**{k: v for k, v in DECODER.items() if "key_value" not in k}),
        "opt": T.OPTConfig(hidden_size=64, ffn_dim=112, num_hidden_layers=2, num_attention_heads=4,
                           word_embed_proj_dim=64),
        # mixtures of experts: top-k routers (ranked), each token's experts batched
        "mixtral": T.MixtralConfig(**DECODER, num_local_experts=4, num_experts_per_tok=2),
        "qwen2_moe": T.Qwen2MoeConfig(**DECODER, num_experts=4, num_experts_per_tok=2,
                                      moe_intermediate_size=32, shared_expert_intermediate_size=64),
        # group-limited routing (a scatter of the chosen groups), latent attention (MLA)
        "deepseek_v3": T.DeepseekV3Config(
            **{**DECODER, "num_key_value_heads": 4}, moe_intermediate_size=32, n_routed_experts=8, n_shared_experts=1,
            num_experts_per_tok=2, n_group=2, topk_group=1, first_k_dense_replace=0,
            q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
            v_head_dim=16),
        "gpt_oss": T.GptOssConfig(**{**DECODER, "intermediate_size": 64}, head_dim=16,
                                  num_local_experts=4, num_experts_per_tok=2,
                                  layer_types=["full_attention"] * 2),  # attention sinks
    }


FAMILIES = ["mistral", "qwen3", "gemma", "gemma2", "phi3", "stablelm", "olmo", "gpt2", "gpt_neox",
            "opt", "mixtral", "qwen2_moe", "deepseek_v3", "gpt_oss"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("families")
    for name, config in _configs().items():
        config.vocab_size, config.max_position_embeddings = 96, 64
        torch.manual_seed(0)
        AutoModelForCausalLM.from_config(config).save_pretrained(root / name)
    return root


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_match_transformers(checkpoints, family: str) -> None:
    program = capture_model(str(checkpoints / family), materialize=True, seq_len=6)
    calls = [op for op in program.module.walk() if isinstance(op, func.CallOp)]
    assert len(calls) == 2, "the two identical layers are one outlined function"
    compiled = Compiled(program)
    result = compiled.check(target="interp", level="tensor", seed=1)
    assert result.ok and result.max_rel <= 1e-4, result.line()
    if cpu_runtime_available():
        result = compiled.check(target="cpu", seed=2)
        assert result.ok, result.line()


def test_a_checkpoint_missing_a_tensor_is_refused(checkpoints, tmp_path) -> None:
    """transformers' loader (the fallback for renamed checkpoints) initialises a tensor it does
    not find at random; deplo names it instead of compiling random weights."""
    import shutil

    from safetensors.torch import load_file, save_file

    from deplo.frontend.errors import FrontendError

    family = FAMILIES[0]
    shutil.copytree(checkpoints / family, tmp_path / family)
    (shard,) = (tmp_path / family).glob("*.safetensors")
    tensors = load_file(shard)
    dropped = next(n for n in tensors if "layers.1." in n or ".h.1." in n)
    save_file({k: v for k, v in tensors.items() if k != dropped}, shard, metadata={"format": "pt"})
    with pytest.raises(FrontendError, match=f"missing tensor {dropped}"):
        capture_model(str(tmp_path / family), materialize=True, seq_len=6)


@pytest.mark.parametrize("field,value", [("hidden_act", "swish3"),
                                         ("rope_scaling", {"rope_type": "bogus", "factor": 2.0})])
def test_a_config_value_transformers_does_not_know_is_named(tmp_path, field, value) -> None:
    import json

    from deplo.frontend.errors import FrontendError

    config = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              field: value}
    (tmp_path / "config.json").write_text(json.dumps(config))
    name = value if isinstance(value, str) else value["rope_type"]
    with pytest.raises(FrontendError, match=f"does not know '{name}' \\(config.json's rope|"
                                            f"does not know '{name}' \\(config.json's {field}"):
        capture_model(str(tmp_path), seq_len=4)


def test_an_unknown_model_type_is_named_not_listed_against_all(tmp_path) -> None:
    import json

    from deplo.frontend.errors import FrontendError

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama2", "hidden_size": 8}))
    with pytest.raises(FrontendError, match=r"unsupported config: model_type 'llama2' is not "
                                            r"one transformers knows$"):
        capture_model(str(tmp_path), seq_len=4)


def test_weights_past_the_memory_available_are_refused(tmp_path, monkeypatch) -> None:
    """Checked on the meta model before anything is allocated (a 7B config in fp32 would swap
    the machine); --num-layers and bf16 are the way out, and the message says so."""
    import json

    from deplo.frontend import models
    from deplo.frontend.errors import FrontendError

    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 4, "num_attention_heads": 4}))
    monkeypatch.setattr(models, "available_memory", lambda: 1_000_000)
    with pytest.raises(FrontendError,
                       match=r"0 M parameters need 1 MB, more than the 1 MB.*--num-layers"):
        capture_model(str(tmp_path), materialize=True, seq_len=4)
    capture_model(str(tmp_path), seq_len=4)  # on meta: nothing to allocate


def test_num_layers_on_a_config_whose_layer_types_are_derived(tmp_path) -> None:
    """Jamba's layer_types is a read-only property (it follows num_hidden_layers): --num-layers
    cuts the layers without setting it (was an AttributeError traceback)."""
    import transformers as T

    config = T.JambaConfig(**DECODER, vocab_size=96, num_experts=4, num_experts_per_tok=2,
                           attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                           expert_layer_offset=1, mamba_d_state=8, mamba_dt_rank=8,
                           use_mamba_kernels=False)
    config.save_pretrained(tmp_path)
    program = capture_model(str(tmp_path), num_layers=1, seq_len=4)
    assert any(isinstance(op, func.FuncOp) for op in program.module.walk())
