"""`deplo generate MODEL --prompt-ids 1,2,3 | --prompt TEXT`: greedy decoding with one compiled
program.

With a KV cache (Llama, Qwen2, Mistral, Qwen3: frontend/decode.py): one decode step is compiled
for the whole context, the position and the cache slots are its runtime inputs; the prompt is
fed one token a step (prefill through the same program), then each new token. Other families:
the model is captured once as `input_ids -> logits` over the whole context, and every step runs
it on the ids so far, padded — causal attention keeps the padding from changing the logits at
the last real position. Either way no step recompiles and the ids equal `transformers`' greedy
`generate`. On the GPU the weights (and the KV cache) stay on the device between steps
(runtime/gpu/resident.py).

    result = generate("./tiny-llama", [1, 2, 3], max_new_tokens=8)   # result.ids, .tokens_per_s
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from deplo.frontend.decode import FAMILIES
from deplo.frontend.errors import FrontendError
from deplo.frontend.models import DTYPES

PAD = 0  # any valid id: causal attention never lets a later position change an earlier one


@dataclass
class Generated:
    prompt: list[int]
    new: list[int] = field(default_factory=list)
    seconds: float = 0.0  # the decode loop, compilation excluded
    compile_seconds: float = 0.0
    programs: int = 1  # programs compiled for the whole generation
    stopped_at_eos: bool = False
    kv_cache: bool = False
    why_padded: str = ""  # why there is no KV-cache step, where there is none
    device: str = ""  # on the GPU: what stayed on the device and what crossed per step

    @property
    def ids(self) -> list[int]:
        return self.prompt + self.new

    @property
    def tokens_per_s(self) -> float:
        return len(self.new) / self.seconds if self.seconds > 0 else float("inf")


def parse_ids(text: str) -> list[int]:
    """--prompt-ids: "1,2,3" (an argparse type: a bad value is a usage error)."""
    from argparse import ArgumentTypeError

    try:
        ids = [int(t) for t in text.replace(" ", "").removesuffix(",").split(",")]
    except ValueError:
        raise ArgumentTypeError(f"expected comma-separated token ids, got {text!r}") from None
    if not ids or min(ids) < 0:
        raise ArgumentTypeError(f"expected at least one id, none negative, got {text!r}")
    return ids


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def tokenizer_for(spec: str):
    """The model directory's tokenizer (offline), or None where it has no tokenizer files."""
    from pathlib import Path

    has_files = Path(spec).is_dir() and any((Path(spec) / f).is_file() for f in TOKENIZER_FILES)
    if Path(spec).is_dir() and not has_files:
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(spec, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - a hub name with nothing cached offline: ids only
        if has_files:  # (files that do not load: say why, not that there are none)
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise FrontendError(f"{spec}: its tokenizer files do not load: {first}") from None
        return None


def eos_ids(spec: str, config) -> set[int]:
    """The ids that end a generation: generation_config.json's, else the config's."""
    ids = getattr(config, "eos_token_id", None)
    try:
        from transformers import GenerationConfig

        ids = GenerationConfig.from_pretrained(spec, local_files_only=True).eos_token_id
    except Exception:  # noqa: BLE001, S110 - no generation config: the model config's
        pass
    ids = ids if isinstance(ids, list) else [ids]
    return {int(i) for i in ids if i is not None}


def generate(spec: str, prompt: list[int], max_new_tokens: int, *, target: str = "cpu",
             dtype: str = "fp32", seed: int = 0, verbose: int = 0, schedule: str | None = None,
             strict: bool = True, stop_at_eos: bool = True, rank: bool = True) -> Generated:
    """Greedy ids after `prompt`: `max_new_tokens`, or fewer where an end-of-sequence id comes
    first (kept, as `transformers` keeps it) unless not `stop_at_eos`."""
    from deplo.frontend.models import hf_config, resolve_model

    source = resolve_model(spec)
    config = hf_config(source)
    stop = eos_ids(spec, config) if stop_at_eos else set()
    if not prompt:
        raise FrontendError("the prompt has no ids: generation starts from at least one")
    if min(prompt) < 0:
        raise FrontendError(f"the prompt's id {min(prompt)} is negative")
    if max(prompt) >= config.vocab_size:
        raise FrontendError(f"--prompt-ids: id {max(prompt)} is past the vocabulary "
                            f"({config.vocab_size} ids)")
    context = len(prompt) + max_new_tokens - 1  # the last new token needs no forward pass
    limit = getattr(config, "max_position_embeddings", None)
    if limit is not None and context > limit:
        raise FrontendError(f"{len(prompt)} prompt ids + {max_new_tokens} new tokens need "
                            f"{context} positions; the model takes at most {limit}")
    out = Generated(list(prompt))
    start = time.perf_counter()
    window = _kv_window(config)
    if not isinstance(window, str):
        step = _cached_steps(spec, prompt, context, window, target, dtype, seed, verbose,
                             schedule, strict, rank, out)
    else:
        out.why_padded = window
        _padding_is_harmless(config, context)
        step = _full_context_steps(spec, prompt, context, target, dtype, seed, verbose, schedule,
                                   strict, rank, out)
    out.compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for token in step:
        out.new.append(token)
        if token in stop or len(out.new) == max_new_tokens:
            out.stopped_at_eos = token in stop
            break
    out.seconds = time.perf_counter() - start
    return out


def _padding_is_harmless(config, context: int) -> None:
    """The padded whole-context step holds only where a position's logits ignore the padding
    after it: not with longrope past its original length, whose rotary factors follow the
    sequence's length (Phi-3 128k: the padded length would pick the long factors early)."""
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
    rope = rope if isinstance(rope, dict) else {}
    kind = rope.get("rope_type") or rope.get("type")
    original = rope.get("original_max_position_embeddings") or \
        getattr(config, "original_max_position_embeddings", None)
    if kind == "longrope" and original and context > original:
        raise FrontendError(
            f"{config.model_type} with longrope over {context} positions: its rotary factors "
            f"change past {original} positions with the sequence's length, which the padded "
            f"whole-context step (no KV-cache step here) cannot follow; use at "
            f"most {original} positions (prompt + new tokens - 1)")


def _ignores_what_follows(program, prompt: list[int], context: int) -> None:
    """The padded step needs a model whose logits at a position ignore the ids after it. No
    config field says so for every family (BERT's is_decoder is as False as GPT-2's), so the
    model is asked: eager logits at the prompt's last position under two different paddings."""
    if len(prompt) == context:
        return
    last = []
    for pad in (PAD, PAD + 1):
        ids = np.full((1, context), pad, dtype=program.example_inputs[0].dtype)
        ids[0, :len(prompt)] = prompt
        last.append(program.reference([ids])[0][0, len(prompt) - 1].astype(np.float64))
    if np.max(np.abs(last[0] - last[1])) > 1e-3 * max(np.max(np.abs(last[0])), 1e-30):
        raise FrontendError(
            "the model's logits at a position change with the ids after it (attention that is "
            "not causal, as in BERT-like encoders): greedy generation over a padded context "
            "would follow the padding; deplo generate takes causal language models")


def _kv_window(config) -> int | None | str:
    """The attention window of the KV-cache step (None: the whole past), or why there is no
    such step."""
    from deplo.frontend.decode import attention_window

    if config.model_type not in FAMILIES:
        return f"no KV-cache step for {config.model_type} yet"
    try:
        return attention_window(config)
    except FrontendError as e:
        return str(e)


def _compile(program, target: str, verbose: int, schedule, strict, rank):
    import sys

    from deplo.runtime.memory_plan import memory_lines
    from deplo.tools.api import Compiled

    compiled = Compiled(program, verbose, schedule, strict, rank=rank)
    exe = compiled.executable(target, level="tensor" if target == "interp" else None)
    for line in memory_lines(exe) if verbose else ():
        print(f"deplo: memory {line}", file=sys.stderr)
    return exe


def _run(exe, inputs: list, kept: list, out: Generated, download=None) -> list:
    """One step. On the GPU the `kept` inputs (weights, a KV cache) stay on the device after the
    first step and the launches replay as a CUDA graph (runtime/gpu/resident.py)."""
    if getattr(exe, "target", None) != "gpu":  # the interpreters have no target
        return exe.run(inputs + kept)
    result = exe.run(inputs + kept, keep=len(kept), download=download)
    r = exe.resident(len(kept))
    mb = sum(w.nbytes for w in kept) / 1e6
    out.device = (f"{mb:.1f} MB kept on the device (uploaded once); "
                  f"{(r.uploaded / 1e6 - mb) / r.runs * 1e3:.1f} KB uploaded a step; "
                  f"{len(r.steps)} launches a step"
                  + (", replayed as one CUDA graph" if r.replays_graph else ""))
    return result


def _full_context_steps(spec, prompt, context, target, dtype, seed, verbose, schedule, strict,
                        rank, out: Generated):
    """The next id per step from the padded whole-context program (compiled here, once)."""
    from deplo.frontend.causal_lm import capture_model

    program = capture_model(spec, materialize=True, seq_len=context, seed=seed,
                            dtype=DTYPES[dtype])
    _ignores_what_follows(program, prompt, context)
    exe = _compile(program, target, verbose, schedule, strict, rank)
    weights = list(program.params)
    ids = np.full((1, context), PAD, dtype=program.example_inputs[0].dtype)
    ids[0, :len(prompt)] = prompt

    def steps():
        real = len(prompt)
        while True:
            logits = _run(exe, [ids], weights, out)[0]
            token = int(np.argmax(logits[0, real - 1].astype(np.float32)))
            yield token
            if real < context:
                ids[0, real] = token
            real += 1

    return steps()


def _cached_steps(spec, prompt, context, window, target, dtype, seed, verbose, schedule, strict,
                  rank, out: Generated):
    """The next id per step from the KV-cache decode step (compiled here, once): the prompt's
    tokens go in one a step, then each new token; each step's key/value goes into its slot (on
    the GPU the cache stays on the device and the slot is written there)."""
    from deplo.frontend.decode import capture_decode_step, step_mask

    program = capture_decode_step(spec, context, seed=seed, dtype=DTYPES[dtype])
    exe = _compile(program, target, verbose, schedule, strict, rank)
    out.kv_cache = True
    weights = list(program.params)
    caches = [np.zeros_like(x) for x in program.example_inputs[3:]]

    def steps():
        feed = list(prompt)
        for position in range(context):
            ids = np.array([[feed[position]]], dtype=program.example_inputs[0].dtype)
            pos = np.array([[position]], dtype=program.example_inputs[1].dtype)
            mask = step_mask(position, context, DTYPES[dtype], window).float().numpy()
            if target == "gpu":
                logits = _run(exe, [ids, pos, mask], caches + weights, out, download=[0])[0]
                for i in range(len(caches)):
                    exe.resident(len(caches) + len(weights)).write_slot(3 + i, 1 + i, position)
            else:
                logits, *new = _run(exe, [ids, pos, mask, *caches], weights, out)
                for cache, kv in zip(caches, new, strict=True):
                    cache[:, :, position] = kv[:, :, 0]
            if position >= len(prompt) - 1:
                token = int(np.argmax(logits[0, -1].astype(np.float32)))
                feed.append(token)
                yield token

    return steps()


def add_arguments(p, int_in, seed_type) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="a Hugging Face model directory or id (offline; random weights without any)")
    prompt = p.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", default=None, metavar="TEXT",
                        help="text, tokenized with the model directory's tokenizer")
    prompt.add_argument("--prompt-ids", type=parse_ids, default=None, metavar="IDS",
                        help="comma-separated token ids (no tokenizer needed)")
    p.add_argument("--max-new-tokens", type=int_in(1, 4096), default=16)
    p.add_argument("--target", choices=["cpu", "gpu", "interp"], default=None,
                   help="cpu: the .cu on the CPU runtime (default without a GPU); gpu: NVRTC + "
                        "driver; interp: the Loop IR interpreter")
    p.add_argument("--dtype", choices=sorted(DTYPES), default=None,
                   help="default: the checkpoint's dtype on the GPU, fp32 elsewhere")
    p.add_argument("--seed", type=seed_type, default=None, help="seed of random weights")
    p.add_argument("--ignore-eos", action="store_true",
                   help="generate --max-new-tokens ids even past an end-of-sequence id")
    p.add_argument("--db", default=None, metavar="PATH", help="a tuning store's plans to use")
    p.add_argument("--no-rank", dest="rank", action="store_false",
                   help="the heuristic's plans alone (no cost-model choice for big matmuls)")
    p.add_argument("-v", "--verbose", action="count", default=0)


def cmd_generate(args, target: str) -> int:
    import sys

    from deplo.frontend.models import resolve_model, stored_dtype
    from deplo.tools.tune_cmd import tuned_schedule

    tokenizer = tokenizer_for(args.model)
    if args.prompt is not None:
        if tokenizer is None:
            raise FrontendError(f"--prompt: {args.model} has no tokenizer files; use --prompt-ids")
        prompt = tokenizer(args.prompt)["input_ids"]
        if not prompt:
            raise FrontendError("--prompt: the text tokenizes to no ids")
    else:
        prompt = args.prompt_ids
    dtype = args.dtype or (stored_dtype(resolve_model(args.model)) if target == "gpu" else "fp32")
    schedule = tuned_schedule(args.db, None, args.verbose)
    out = generate(args.model, prompt, args.max_new_tokens, target=target, dtype=dtype,
                   seed=args.seed or 0, verbose=args.verbose, schedule=schedule,
                   rank=args.rank,
                   stop_at_eos=not args.ignore_eos)
    print("ids: " + ", ".join(map(str, out.prompt)) + " | " + ", ".join(map(str, out.new)))
    if tokenizer is not None:
        print("text: " + repr(tokenizer.decode(out.ids)))
    how = ("a KV-cache decode step; the prompt fed through it" if out.kv_cache else
           f"the whole context, padded, per step: {out.why_padded}")
    plural = "" if len(out.new) == 1 else "s"
    print(f"deplo: {len(out.new)} new token{plural} in {out.seconds:.2f} s ({out.tokens_per_s:.1f} "
          f"tokens/s, {target}, {dtype}); {out.programs} program compiled in "
          f"{out.compile_seconds:.1f} s ({how})" + ("; stopped at the end-of-sequence id"
                                                   if out.stopped_at_eos else ""), file=sys.stderr)
    if out.device and args.verbose:
        print(f"deplo: device: {out.device}", file=sys.stderr)
    return 0
