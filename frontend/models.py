"""Model sources: a local HF directory, or a model id resolved offline.

    deplo compile ./my-llama           # config.json + model.safetensors (or a sharded index)
    deplo compile Qwen/Qwen2.5-7B      # the local HF cache if it has it, else the built-in config

An id is looked up in the local Hugging Face cache (`$HF_HUB_CACHE`, `$HF_HOME/hub` or
`~/.cache/huggingface/hub`); if it is not there, the built-in table of published configs below
gives the architecture and the weights are random (said in one line). Nothing is downloaded.
Weights are read with safetensors only (never pickle), every tensor is checked against the
config's shapes before any is assigned, so a bad checkpoint is an error and nothing half-loaded.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from deplo.frontend.errors import FrontendError

# The published config.json of each supported id (architecture fields only).
_TINYLLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
    "num_hidden_layers": 22, "num_key_value_heads": 4, "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "attention_bias": False,
    "tie_word_embeddings": False, "vocab_size": 32000, "bos_token_id": 1, "eos_token_id": 2,
    "torch_dtype": "bfloat16",
}
_QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
    "use_sliding_window": False, "max_window_layers": 28, "tie_word_embeddings": False,
    "vocab_size": 152064, "bos_token_id": 151643, "eos_token_id": 151643,
    "torch_dtype": "bfloat16",
}
KNOWN_CONFIGS: dict[str, dict] = {
    "TinyLlama/TinyLlama-1.1B-Chat-v1.0": _TINYLLAMA,
    "Qwen/Qwen2.5-7B": _QWEN25_7B,
    "Qwen/Qwen2.5-7B-Instruct": {**_QWEN25_7B, "max_position_embeddings": 32768,
                                 "eos_token_id": 151645},
}


@dataclass
class ModelSource:
    """Where a model's config and weights come from."""

    name: str
    config: dict
    weight_files: list[Path] = field(default_factory=list)
    origin: str = ""

    @property
    def has_weights(self) -> bool:
        return bool(self.weight_files)


def hf_cache_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("HF_HUB_CACHE"):
        dirs.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    dirs.append(Path.home() / ".cache" / "huggingface" / "hub")
    return dirs


def _weight_files(directory: Path) -> list[Path]:
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError) as e:
            raise FrontendError(f"{index}: not a safetensors index ({e})") from None
        missing = [s for s in shards if not (directory / s).is_file()]
        if missing:
            raise FrontendError(f"{index} names shards that are missing: {', '.join(missing)}")
        return [directory / s for s in shards]
    single = directory / "model.safetensors"
    if single.is_file():
        return [single]
    if list(directory.glob("*.bin")) or list(directory.glob("*.pt")):
        raise FrontendError(f"{directory}: only pickle checkpoints (.bin/.pt); deplo reads safetensors")
    return []


def _read_config(path: Path) -> dict:
    try:
        config = json.loads(path.read_text())
    except ValueError as e:
        raise FrontendError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise FrontendError(f"{path}: expected a JSON object, got {type(config).__name__}")
    return config


def resolve_model(spec: str) -> ModelSource:
    """A directory, a cached id, or a known id; otherwise an error listing what was tried."""
    path = Path(spec)
    if path.suffix == ".mlir" and path.is_file():
        raise FrontendError(f"{spec}: an IR file, not a model; deplo-opt {spec} -p to-cuda "
                            f"lowers it, and deplo compile|run take -c EXPR or a model")
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise FrontendError(f"{path}: no config.json (expected a Hugging Face model directory)")
        return ModelSource(str(path), _read_config(cfg), _weight_files(path), f"directory {path}")
    looked = [f"a directory named {spec!r}"]
    if "/" in spec:
        repo = "models--" + spec.replace("/", "--")
        for cache in hf_cache_dirs():
            for snap in sorted((cache / repo / "snapshots").glob("*")):
                if (snap / "config.json").is_file():
                    return ModelSource(spec, _read_config(snap / "config.json"),
                                       _weight_files(snap), f"HF cache {snap}")
            looked.append(str(cache / repo / "snapshots" / "*" / "config.json"))
    if spec in KNOWN_CONFIGS:
        return ModelSource(spec, dict(KNOWN_CONFIGS[spec]), [], "built-in config table")
    looked.append(f"the built-in configs ({', '.join(KNOWN_CONFIGS)})")
    raise FrontendError(f"model {spec!r} not found offline; looked for: " + "; ".join(looked))


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def stored_dtype(source: ModelSource) -> str:
    """The dtype a checkpoint declares (config.json `dtype`, or the older `torch_dtype`) as a
    DTYPES name; fp32 where it declares none or another."""
    stored = str(source.config.get("dtype") or source.config.get("torch_dtype") or "")
    return {"bfloat16": "bf16", "float16": "fp16"}.get(stored.removeprefix("torch."), "fp32")


def hf_config(source: ModelSource, num_layers: int | None = None):
    from huggingface_hub.errors import StrictDataclassError
    from transformers import AutoConfig

    cfg = dict(source.config)
    model_type = cfg.pop("model_type", None)
    if not isinstance(model_type, str):
        raise FrontendError(f"{source.origin}: config has no model_type (a string)")
    _check_sizes(cfg, source.origin)
    try:
        config = AutoConfig.for_model(model_type, **cfg)
    except (ValueError, KeyError, TypeError, StrictDataclassError) as e:
        why = str(e)
        if "Unrecognized model identifier" in why:  # (transformers lists every model type)
            why = f"model_type {model_type!r} is not one transformers knows"
        raise FrontendError(f"{source.origin}: unsupported config: {why}") from None
    _check_sizes({k: getattr(config, k, None) for k in _SIZES}, source.origin)  # the defaults
    if num_layers is not None:
        if not 1 <= num_layers <= config.num_hidden_layers:
            raise FrontendError(
                f"--num-layers {num_layers}: the model has {config.num_hidden_layers} layers"
            )
        config.num_hidden_layers = num_layers
        for key in ("layer_types", "max_window_layers"):
            value = getattr(config, key, None)
            if isinstance(value, list):
                with contextlib.suppress(AttributeError):  # (Jamba derives its layer_types)
                    setattr(config, key, value[:num_layers])
    config._attn_implementation = "sdpa"
    # a mixture of experts' dispatch: each token's k experts' weights gathered and batched
    # (static shapes), not grouped by expert (histc and data-dependent group sizes)
    config._experts_implementation = "batched_mm"
    return config


_SIZES = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
          "num_hidden_layers", "vocab_size", "head_dim", "max_position_embeddings")


def _check_sizes(values: dict, origin: str) -> None:
    """Sizes a model can be built from: integers in [1, 2^31), heads dividing the hidden size
    and the key/value heads the heads (transformers accepts `hidden_size: 0` or a negative
    vocabulary and fails later, deep inside torch)."""
    for key in _SIZES:
        v = values.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v < 2**31):
            raise FrontendError(f"{origin}: config {key} = {v!r}: expected an integer in [1, 2^31)")
    hidden, heads = values.get("hidden_size"), values.get("num_attention_heads")
    kv = values.get("num_key_value_heads")
    if hidden and heads and values.get("head_dim") is None and hidden % heads:
        raise FrontendError(f"{origin}: config num_attention_heads = {heads} does not divide "
                            f"hidden_size = {hidden}")
    if heads and kv and heads % kv:
        raise FrontendError(f"{origin}: config num_key_value_heads = {kv} does not divide "
                            f"num_attention_heads = {heads}")


def build_model(source: ModelSource, *, num_layers: int | None = None, device: str = "meta",
                dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.nn.Module:
    """The causal LM on `device`: weights from the checkpoint, else random (seeded).

    On `meta` nothing is allocated, so capturing Qwen2.5-7B needs no weights; buffers that are
    functions of the config (rotary inverse frequencies) are rebuilt on the CPU so the importer
    can fold what depends only on them."""
    config = hf_config(source, num_layers)
    if device != "meta":
        _fits_in_memory(_instantiate(config, source, "meta", dtype), source)
    torch.manual_seed(seed)
    model = _instantiate(config, source, device, dtype)
    model.eval()
    for name, mod in list(model.named_modules()):
        if name.endswith("rotary_emb"):
            parent = model.get_submodule(name.rsplit(".", 1)[0])
            parent.rotary_emb = rotary = type(mod)(config=config)
            if "dynamic" in str(getattr(rotary, "rope_type", "")) and \
                    getattr(rotary, "original_max_seq_len", 0) >= config.max_position_embeddings:
                # dynamic NTK rescales only past its original length, which no sequence deplo
                # takes reaches: the plain rope, without the max(positions) it would read
                rotary.rope_type = "default"
    if source.has_weights and device != "meta":
        load_weights(model, source.weight_files, dtype)
    return model


def _instantiate(config, source: ModelSource, device: str, dtype: torch.dtype) -> torch.nn.Module:
    """transformers' model for `config`; what it refuses (an unknown architecture, activation
    or rope type) is one line naming the config field."""
    from transformers import AutoModelForCausalLM

    try:
        with torch.device(device):
            try:
                return AutoModelForCausalLM.from_config(config, dtype=dtype)
            except ValueError as e:
                if "attention implementation" not in str(e):
                    raise
                # a family without an SDPA path (Gemma2's soft-capping): its eager attention
                return AutoModelForCausalLM.from_config(config, dtype=dtype,
                                                         attn_implementation="eager")
    except ValueError as e:
        first = str(e).splitlines()[0]  # transformers appends every supported class
        archs = getattr(config, "architectures", None)
        named = config.model_type + (f" ({', '.join(archs)})" if archs else "")
        raise FrontendError(f"{source.origin}: unsupported architecture: {first} (deplo runs "
                            f"causal language models, AutoModelForCausalLM; this is "
                            f"{named})") from None
    except KeyError as e:
        value = e.args[0] if e.args else ""
        fields = [k for k, v in config.to_dict().items()
                  if v == value or (isinstance(v, dict) and value in v.values())]
        where = f" (config.json's {', '.join(fields)})" if fields else ""
        raise FrontendError(f"{source.origin}: transformers' {config.model_type} does not "
                            f"know {value!r}{where}") from None


def _fits_in_memory(model: torch.nn.Module, source: ModelSource) -> None:
    """Refuse weights larger than the memory available now (Linux's MemAvailable): a 7B model
    in fp32 would otherwise swap the machine for minutes before failing."""
    need = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    if (have := available_memory()) is not None and need > have:
        params = sum(t.numel() for t in model.parameters())
        raise FrontendError(
            f"{source.origin}: {params / 1e6:,.0f} M parameters need {need / 1e6:,.0f} MB, "
            f"more than the {have / 1e6:,.0f} MB of memory available; --num-layers N builds "
            f"fewer layers, --dtype bf16 halves fp32's bytes")


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable); None where it is not known."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable"))
    except (OSError, StopIteration, ValueError):
        return None


def _beyond(name: str, layers: int) -> bool:
    """A tensor of a layer past the first `layers` (`--num-layers`): its first numeric path
    component (`model.layers.5.mlp...`, `transformer.h.5...`) is the layer index."""
    index = next((int(p) for p in name.split(".") if p.isdigit()), None)
    return index is not None and index >= layers


def _renamed_checkpoint(model: torch.nn.Module, files: list[Path],
                        dtype: torch.dtype) -> dict[str, torch.Tensor] | None:
    """A checkpoint written under other tensor names (GPT-NeoX's `embed_out` for `lm_head`):
    transformers' own loader knows each family's renamings, so its state dict is used; None
    where it cannot load the checkpoint either."""
    from transformers import AutoModelForCausalLM

    try:
        ref, info = AutoModelForCausalLM.from_pretrained(
            files[0].parent, config=model.config, dtype=dtype, local_files_only=True,
            output_loading_info=True)
    except Exception:  # noqa: BLE001 - the caller reports the names that do not match
        return None
    # a tensor transformers did not find it initialises at random: not a renaming, a checkpoint
    # that lacks it (the caller's error names it)
    return None if info.get("missing_keys") else dict(ref.state_dict())


def load_weights(model: torch.nn.Module, files: list[Path], dtype: torch.dtype) -> None:
    """Read safetensors shards (only the layers the model has, with --num-layers), check every
    name and shape against the model, then assign."""
    from safetensors import SafetensorError, safe_open

    expected = {k: v for k, v in model.state_dict().items()}
    layers = model.config.num_hidden_layers
    loaded: dict[str, torch.Tensor] = {}
    for f in files:
        try:
            with safe_open(str(f), "pt") as st:
                for name in st.keys():  # noqa: SIM118 - a safe_open handle, not a dict
                    if name in expected or not _beyond(name, layers):
                        loaded[name] = st.get_tensor(name)
        except (SafetensorError, OSError, ValueError) as e:
            raise FrontendError(f"{f}: cannot read safetensors: {e}") from None
    problems = []
    for name, tensor in loaded.items():
        if name not in expected:
            problems.append(f"unexpected tensor {name}")
        elif tuple(tensor.shape) != tuple(expected[name].shape):
            problems.append(
                f"{name}: checkpoint shape {tuple(tensor.shape)}, config expects "
                f"{tuple(expected[name].shape)}"
            )
    tied = getattr(model.config, "tie_word_embeddings", False)
    missing = [n for n in expected if n not in loaded and not (tied and n == "lm_head.weight")
               and not n.endswith("rotary_emb.inv_freq")]
    problems += [f"missing tensor {n}" for n in missing]
    if problems and all(p.startswith(("unexpected", "missing")) for p in problems):
        renamed = _renamed_checkpoint(model, files, dtype)  # names only: an older naming
        if renamed is not None:
            loaded, problems = renamed, []
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise FrontendError(f"checkpoint does not match the config: {shown}")
    model.load_state_dict({k: v.to(dtype) for k, v in loaded.items()}, strict=False)
    if tied:
        model.tie_weights()
