"""`deplo generate`: greedy ids equal to transformers' `generate(do_sample=False)` on the same
random weights, for five families (four through the KV-cache decode step, Granite through the
padded whole-context program), on the CPU runtime and the interpreter; one program is compiled;
the decode step itself matches PyTorch; end-of-sequence stops; bad prompts are one clear line;
a model that is not causal (BERT) is refused."""

from __future__ import annotations

import pytest
import torch
from test_cli import run

from deplo.tools.generate import generate

SMALL = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32}
PROMPT = [5, 17, 3]


def _families():
    import transformers as T

    return {"llama": (T.LlamaConfig, T.LlamaForCausalLM, {}),
            "qwen2": (T.Qwen2Config, T.Qwen2ForCausalLM, {"tie_word_embeddings": True}),
            "mistral": (T.MistralConfig, T.MistralForCausalLM, {}),
            "qwen3": (T.Qwen3Config, T.Qwen3ForCausalLM, {"head_dim": 16}),
            "granite": (T.GraniteConfig, T.GraniteForCausalLM, {"residual_multiplier": 0.5})}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen")
    for name, (config, model, extra) in _families().items():
        torch.manual_seed(3)
        model(config(**SMALL, **extra, eos_token_id=None)).save_pretrained(root / name)
    return root


def _transformers_ids(path, prompt, n) -> list[int]:
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(path).eval()
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False)
    return out[0, len(prompt):].tolist()


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral", "qwen3", "granite"])
def test_ids_equal_transformers_on_the_cpu_runtime(checkpoints, family: str) -> None:
    got = generate(str(checkpoints / family), PROMPT, 8, target="cpu")
    assert got.new == _transformers_ids(checkpoints / family, PROMPT, 8)
    assert got.programs == 1 and len(got.ids) == len(PROMPT) + 8
    assert got.kv_cache == (family != "granite")
    assert got.why_padded == ("" if got.kv_cache else "no KV-cache step for granite yet")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_decode_step_matches_pytorch(checkpoints, dtype) -> None:
    from deplo.frontend.decode import capture_decode_step
    from deplo.tools.api import Compiled

    step = Compiled(capture_decode_step(str(checkpoints / "qwen3"), 12, dtype=dtype))
    assert [n for n in step.program.input_names[:5]] == ["ids", "position", "mask", "k0", "v0"]
    for target in ("interp", "cpu"):
        result = step.check(target=target, seed=4)
        assert result.ok, result.line()


def test_ids_equal_transformers_on_the_interpreter(checkpoints) -> None:
    got = generate(str(checkpoints / "qwen2"), [1], 5, target="interp")
    assert got.new == _transformers_ids(checkpoints / "qwen2", [1], 5)


def test_stops_at_the_end_of_sequence_id(checkpoints, tmp_path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = generate(str(checkpoints / "llama"), PROMPT, 6, target="cpu").new
    eos = ids[2]  # the third new token ends the sequence
    torch.manual_seed(3)
    LlamaForCausalLM(LlamaConfig(**SMALL, eos_token_id=eos)).save_pretrained(tmp_path)
    got = generate(str(tmp_path), PROMPT, 6, target="cpu")
    assert got.new == ids[:3] and got.stopped_at_eos
    assert generate(str(tmp_path), PROMPT, 6, target="cpu", stop_at_eos=False).new == ids


def test_cli(checkpoints) -> None:
    path = str(checkpoints / "mistral")
    p = run("deplo", "generate", path, "--prompt-ids", "5,17,3", "--max-new-tokens", "4", "-v")
    assert p.returncode == 0, p.stderr
    want = _transformers_ids(path, PROMPT, 4)
    assert p.stdout.splitlines()[0] == "ids: 5, 17, 3 | " + ", ".join(map(str, want))
    assert "4 new tokens" in p.stderr and "1 program compiled" in p.stderr


@pytest.mark.parametrize("args, message", [
    (["--prompt-ids", "1,x"], "expected comma-separated token ids"),
    (["--prompt-ids", "1,500"], "past the vocabulary"),
    (["--prompt-ids", "1,-2"], "none negative"),
    (["--prompt-ids", "1,2", "--max-new-tokens", "40"], "the model takes at most 32"),
    (["--prompt", "hello"], "has no tokenizer files; use --prompt-ids"),
])
def test_bad_prompts_are_one_line(checkpoints, args, message) -> None:
    p = run("deplo", "generate", str(checkpoints / "llama"), *args)
    assert p.returncode != 0 and message in p.stderr and "Traceback" not in p.stderr


def test_tokenizer_files_that_do_not_load_say_so(checkpoints, tmp_path) -> None:
    import shutil

    broken = tmp_path / "llama"
    shutil.copytree(checkpoints / "llama", broken)
    (broken / "tokenizer.json").write_text("{garbage")
    p = run("deplo", "generate", str(broken), "--prompt", "hello", "--max-new-tokens", "1")
    assert p.returncode != 0 and "its tokenizer files do not load" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_an_empty_prompt_is_refused_in_one_line(checkpoints) -> None:
    from deplo.frontend.errors import FrontendError
    from deplo.tools.generate import generate

    with pytest.raises(FrontendError, match="the prompt has no ids"):
        generate(str(checkpoints / "llama"), [], 2)


@pytest.mark.parametrize("variant", ["llama_odd_heads_tied_biases", "mistral_window_4",
                                     "qwen2_mixed_window", "llama_dynamic_rope"])
def test_checkpoint_variants(tmp_path, variant: str) -> None:
    """Odd head counts, tied head, biases; a sliding window shorter than the generation (the KV
    step masks slots past the window); layers mixing windowed and full attention (the padded
    whole-context program, which folds each layer's own mask); dynamic NTK rope (whose
    max(positions) export cannot trace; within its length it is the plain rope)."""
    import transformers as T

    base = {"vocab_size": 128, "max_position_embeddings": 64, "num_hidden_layers": 3,
            "eos_token_id": None}
    config, kv = {
        "llama_odd_heads_tied_biases": (T.LlamaConfig(
            **base, hidden_size=96, intermediate_size=160, num_attention_heads=6,
            num_key_value_heads=3, tie_word_embeddings=True, attention_bias=True), True),
        "mistral_window_4": (T.MistralConfig(
            **base, hidden_size=64, intermediate_size=96, num_attention_heads=4,
            num_key_value_heads=2, sliding_window=4), True),
        "qwen2_mixed_window": (T.Qwen2Config(
            **base, hidden_size=64, intermediate_size=96, num_attention_heads=4,
            num_key_value_heads=2, use_sliding_window=True, sliding_window=4,
            max_window_layers=1), False),
        "llama_dynamic_rope": (T.LlamaConfig(
            **base, hidden_size=64, intermediate_size=96, num_attention_heads=4,
            rope_scaling={"rope_type": "dynamic", "factor": 4.0}), True),
    }[variant]
    torch.manual_seed(5)
    T.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    prompt = [3, 9, 27, 81, 5]
    got = generate(str(tmp_path), prompt, 10, target="cpu")
    assert got.kv_cache == kv
    assert kv or "mix sliding-window and full attention" in got.why_padded
    assert got.new == _transformers_ids(tmp_path, prompt, 10)


def test_longrope_past_its_original_length_is_refused_on_the_padded_step(tmp_path) -> None:
    """Longrope's rotary factors follow the sequence's length: the padded whole-context step
    (Phi-3 has no KV-cache step yet) would take the long factors for a short sequence."""
    import transformers as T

    from deplo.frontend.errors import FrontendError

    config = T.Phi3Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=2, intermediate_size=64, vocab_size=64,
                          max_position_embeddings=64, original_max_position_embeddings=16,
                          pad_token_id=0, rope_scaling={"type": "longrope",
                                                        "long_factor": [2.0] * 8,
                                                        "short_factor": [1.0] * 8})
    torch.manual_seed(0)
    T.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "phi3")
    with pytest.raises(FrontendError, match="longrope over 18 positions.*at most 16"):
        generate(str(tmp_path / "phi3"), [4, 5, 6], 16, target="interp")
    assert len(generate(str(tmp_path / "phi3"), [4, 5, 6], 2, target="interp",
                        stop_at_eos=False).new) == 2


def test_a_model_that_is_not_causal_is_refused(tmp_path) -> None:
    """BERT's logits at a position follow the ids after it: over the padded context it would
    generate from the padding. Refused (after the eager check, before compiling)."""
    import transformers as T

    from deplo.frontend.errors import FrontendError

    torch.manual_seed(0)
    T.BertForMaskedLM(T.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=64,
                                   max_position_embeddings=32)).save_pretrained(tmp_path / "bert")
    with pytest.raises(FrontendError, match="change with the ids after it"):
        generate(str(tmp_path / "bert"), [4, 5, 6], 4, target="interp")
