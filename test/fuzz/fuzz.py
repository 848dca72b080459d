"""A seeded mutation fuzzer: `deplo-opt` on mutated lit inputs, `deplo` on bad command lines.

    python test/fuzz/fuzz.py --seed 1 --count 2000        # the long run
    python test/fuzz/fuzz.py --seed 1 --only 57 -v        # replay one case, show its output

Why: user errors must end in one message and a non-zero status, never a traceback or a hang,
and hand-written tests only cover the inputs someone thought of. Each case mutates one chunk of
a `test/lit` file (lines, tokens, integers, types, SSA names, strings, nesting, bytes) and/or
the command line of one of its RUN lines (pass specs, options, flags, paths), or a `deplo`
command line and model config. Cases run in-process, each under a SIGALRM timeout. A case
fails when an exception escapes `main` (a traceback), when it runs past the timeout, or when
it exits non-zero without saying why. Case K of seed S is the same on every run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIG_INTS = ["0", "-1", "-7", "65536", str(2**31), str(2**32 + 3), str(2**63 - 1), str(2**63),
            str(2**64 + 1), "1" + "0" * 40]
BAD_VALUES = ["0", "-1", "-300", "1.5", "abc", "", "true", str(2**63), "1" + "0" * 30, "100000",
              '"x"', "1,2"]
TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index"]
FLAGS = [["--split-input-file"], ["--print-op-generic"], ["--verify-diagnostics"],
         ["--print-ir-after-all"], ["-t", "cuda"], ["-t", "nope"], ["-t", "cuda{"], ["--bogus"],
         ["--pass-pipe=to-loop"], ["-p"], ["-o", "{dir}"], ["-o", "/dev/full"],
         ["-o", "{dir}/no/such/out.mlir"], ["--parsing-diagnostics"], ["-f", "nope"]]


@dataclass
class Case:
    tool: str  # "deplo-opt" or "deplo"
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)  # name (under the case dir) -> bytes
    what: str = ""


@dataclass
class Outcome:
    kind: str  # ok | error | traceback | hang | silent
    code: int = 0
    detail: str = ""
    seconds: float = 0.0
    where: str = ""  # for a traceback: the exception type and its innermost deplo/xdsl frame


# ---------------------------------------------------------------------------------------------
# The corpus: every chunk of every lit file, with the deplo-opt command lines its RUN lines use.


@dataclass
class Seed:
    path: str
    chunks: list[str]
    runs: list[list[str]]  # argv without the input path


@functools.cache
def load_corpus() -> list[Seed]:
    seeds = []
    for path in sorted((ROOT / "test" / "lit").rglob("*.mlir")):
        text = path.read_text()
        runs = []
        for line in re.findall(r"RUN:\s*(?:not\s+)?deplo-opt %s([^|]*)", text):
            argv = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', line)]
            runs.append([a for a in argv if a not in ("2>&1",)])
        chunks = [c for c in text.split("// -----") if c.strip()]
        seeds.append(Seed(str(path.relative_to(ROOT)), chunks, runs or [[]]))
    return seeds


def _pass_names() -> list[str]:
    from deplo.passes import pipeline

    return sorted(pipeline.PASSES) + sorted(pipeline.PIPELINES)


# ---------------------------------------------------------------------------------------------
# Mutations of IR text. Each takes (rng, text) and returns the new text.

TOKEN = re.compile(r"%[\w.$-]+|@[\w.$-]+|\"[^\"\n]*\"|[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S")


def _lines(text: str) -> list[str]:
    return text.split("\n")


def m_delete_line(rng, text):
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def m_duplicate_line(rng, text):
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "\n".join(lines)


def m_swap_lines(rng, text):
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def m_resize(rng, text):
    """Every occurrence of one number in the text replaced (shapes and loop bounds stay
    consistent, so the passes see valid IR of another size)."""
    sizes = re.findall(r"(?<=[<x])\d+(?=x)|(?<=x)\d+(?=x)", text)
    if not sizes:
        return text
    old, new = rng.choice(sizes), rng.choice(["1", "2", "3", "7", "17", "33", "100", "1000",
                                               "65536", str(2**31)])
    return re.sub(rf"(?<![\w.%@#]){old}(?![\w.])", new, text)


def m_truncate(rng, text):
    return text[: rng.randrange(len(text) + 1)]


def _replace_match(rng, text, pattern, make):
    found = list(re.finditer(pattern, text))
    if not found:
        return text
    m = rng.choice(found)
    return text[: m.start()] + make(m) + text[m.end() :]


def m_big_int(rng, text):
    return _replace_match(rng, text, r"(?<![\w%@.#])\d+(?![\w.])", lambda m: rng.choice(BIG_INTS))


def m_swap_type(rng, text):
    return _replace_match(rng, text, r"\b(?:f16|bf16|f32|f64|i1|i8|i32|i64|index)\b",
                          lambda m: rng.choice(TYPES))


def m_bound(rng, text):
    return _replace_match(rng, text, r"(?<=to )\d+|(?<== )\d+(?= to)|(?<=step )\d+|"
                          r"(?<=grid\()\d+|(?<=block\()\d+", lambda m: rng.choice(BIG_INTS))


def m_shape_dim(rng, text):
    return _replace_match(rng, text, r"(?<=[<x])\d+(?=x)", lambda m: rng.choice(BIG_INTS))


def m_swap_token(rng, text):
    """Replace one token by another token of the same sort from the same text (SSA names give
    use-before-def and type mismatches, keywords give wrong enums)."""
    tokens = [(m.start(), m.end(), m.group()) for m in TOKEN.finditer(text)]
    if not tokens:
        return text
    s, e, tok = rng.choice(tokens)
    same = [t for _, _, t in tokens if t[:1] == tok[:1] or (t[:1].isalpha() and tok[:1].isalpha())]
    return text[:s] + rng.choice(same) + text[e:]


def m_delete_token(rng, text):
    tokens = list(TOKEN.finditer(text))
    if not tokens:
        return text
    m = rng.choice(tokens)
    return text[: m.start()] + text[m.end() :]


def m_splice(rng, text):
    """A line of another lit chunk inserted (an op of another level, a stray terminator)."""
    other = rng.choice(_lines(rng.choice(rng.choice(load_corpus()).chunks)))
    lines = _lines(text)
    lines.insert(rng.randrange(len(lines) + 1), other)
    return "\n".join(lines)


def m_unterminated_string(rng, text):
    i = rng.randrange(len(text) + 1)
    return text[:i] + '"' + "a" * rng.randrange(20, 40) + text[i:]


def m_deep_nesting(rng, text):
    i = rng.randrange(len(text) + 1)
    opener = rng.choice(["(", "[", "{", "<", "memref<", "scf.if %c {", '"loop.for"() ({'])
    closer = {"(": ")", "[": "]", "{": "}", "<": ">", "memref<": ">"}.get(opener, "})")
    n = rng.randrange(100, 400)
    return text[:i] + opener * n + closer * rng.choice([0, n]) + text[i:]


def m_bytes(rng, text):
    i = rng.randrange(len(text) + 1)
    junk = rng.choice(["\udcff", "\udcc3", "\x00", "\udce2\udc82", "\u00e9", "\t\v\f"])
    return text[:i] + junk + text[i:]


MUTATIONS = [m_delete_line, m_duplicate_line, m_swap_lines, m_truncate, m_big_int, m_swap_type,
             m_bound, m_shape_dim, m_resize, m_resize, m_swap_token, m_swap_token, m_delete_token, m_unterminated_string,
             m_deep_nesting, m_bytes]


def mutate_spec(rng, spec: str) -> str:
    """A pass spec with one part broken: an option of a wrong type or value, an unknown
    option, a stray brace, a named pipeline, an unknown pass."""
    from deplo.passes import pipeline

    names = _pass_names()
    parts = [p for p in re.split(r",(?![^{]*})", spec) if p] or [rng.choice(names)]
    i = rng.randrange(len(parts))
    choice = rng.randrange(6)
    base = parts[i].split("{")[0]
    if choice <= 1 and base in pipeline.PASSES:
        import dataclasses

        fields = [f.name.replace("_", "-") for f in dataclasses.fields(pipeline.PASSES[base]())]
        opt = rng.choice(fields or ["x"]) if choice == 0 else "no-such-option"
        parts[i] = f"{base}{{{opt}={rng.choice(BAD_VALUES)}}}"
    elif choice == 2:
        parts[i] = parts[i] + rng.choice(["{", "}", "{x=", "{=1}", "{a b}", ",,", "{x=1"])
    elif choice == 3:
        parts.insert(i, rng.choice(names))
    elif choice == 4:
        parts[i] = rng.choice(sorted(pipeline.PIPELINES))
    else:
        parts[i] = rng.choice(["no-such-pass", "loop_fuse", "", "builtin.module(", "func.func(x)"])
    return ",".join(parts)


def deplo_opt_case(rng: random.Random, corpus: list[Seed]) -> Case:
    seed = rng.choice(corpus)
    text = rng.choice(seed.chunks)
    argv = list(rng.choice(seed.runs))
    if rng.random() < 0.2:  # a named pipeline from wherever the IR is, printed as CUDA
        argv = ["-p", rng.choice(["to-tir", "to-loop", "to-tile", "to-kernel", "to-cuda"])]
        argv += ["-t", "cuda"] if argv[1] == "to-cuda" else []
    argv = [a for a in argv if a != "--split-input-file"]  # one chunk per case
    what = [seed.path]
    r = rng.random()
    if r < 0.75:
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            mut = rng.choice(MUTATIONS)
            text = mut(rng, text) if text else text
            what.append(mut.__name__[2:])
    if r > 0.6:
        if "-p" in argv and rng.random() < 0.7:
            k = argv.index("-p") + 1
            argv[k] = mutate_spec(rng, argv[k])
            what.append(f"spec {argv[k]!r}")
        else:
            flag = rng.choice(FLAGS)
            argv += flag
            what.append(" ".join(flag))
    data = text.encode("utf-8", "surrogateescape")
    path = "{dir}/input.mlir"
    if rng.random() < 0.05:
        path = rng.choice(["{dir}", "{dir}/missing.mlir"])
    return Case("deplo-opt", [path, *argv], {"input.mlir": data}, " + ".join(what))


# ---------------------------------------------------------------------------------------------
# deplo command lines: a small valid command with one argument, flag or config field broken.

EXPR = "torch.relu(torch.randn(4,8) @ torch.randn(8,4))"
CONFIG = {"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "vocab_size": 64,
          "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 2,
          "max_position_embeddings": 64}
BASES = [
    ["compile", "-c", EXPR, "--ir", "torch"],
    ["compile", "-c", EXPR, "--ir", "loop", "-o", "{dir}/out.mlir"],
    ["compile", "{dir}/model", "--ir", "torch", "--seq-len", "4"],
    ["compile", "{dir}/model", "--layer", "1", "--ir", "tensor", "--seq-len", "4"],
    ["run", "-c", EXPR, "--target", "interp", "--ir", "torch", "--check", "--seed", "3"],
    ["run", "{dir}/model", "--num-layers", "1", "--target", "interp", "--ir", "torch"],
    ["bench", "--suite", "tiny", "--kernel", "rmsnorm", "--dtype", "fp32", "--seq", "8",
     "--no-gpu", "-q"],
]
EXPRS = ["__import__('os').system('echo pwned')", "torch.randn(4,4).to(torch.int64) + 1",
         "torch.randn(4) ** (1 << 70)", "torch.randn(-1, 4)", "x", "torch.randn(4,4)[",
         "(lambda: 1)()", "torch.randn(2,2).__class__", "open('/etc/passwd')", "",
         "torch.randn(" + "(" * 300 + "4" + ")" * 300 + ")", "F.silu(torch.randn(4), inplace=1)"]
CONFIG_VALUES = [0, -1, -64, 3, 7, 2**64, 1.5, "x", None, [], {}, True]


def deplo_case(rng: random.Random) -> Case:
    argv = list(rng.choice(BASES))
    config: object = dict(CONFIG)
    what = []
    choice = rng.randrange(5)
    if choice == 0:  # a value replaced
        slots = [k for k, a in enumerate(argv) if k > 0 and not a.startswith("-")]
        k = rng.choice(slots)
        argv[k] = rng.choice(BAD_VALUES + ["{dir}", "{dir}/missing/x", "nope", "bert-base"])
        what.append(f"value {argv[k]!r}")
    elif choice == 1:  # a flag added
        flag = rng.choice([["--seed", str(2**64)], ["--seed", "-1"], ["--seq-len", "-3"],
                           ["--seq-len", "0"], ["--num-layers", "0"], ["--num-layers", "9"],
                           ["--layer", "-1"], ["--fiber-schedules", "nope"], ["--fiber-schedules", ""],
                           ["--arch", "sm_nope"], ["--seq", "0"], ["--seq", "-8"],
                           ["-o", "{dir}/missing/x.json"], ["-o", "{dir}"], ["-o", "/dev/full"],
                           ["--out", "{dir}/x"],
                           ["--comp"], ["--iters", "-1"], ["--dtype", "fp8"], ["--target", "tpu"],
                           ["--bogus"]])
        argv += flag
        what.append(" ".join(flag))
    elif choice == 2 and "-c" in argv:  # another expression
        argv[argv.index("-c") + 1] = rng.choice(EXPRS)
        what.append(f"expr {argv[argv.index('-c') + 1]!r}")
    else:  # a config field (or the whole config) broken
        if rng.random() < 0.15:
            config = rng.choice([[], "llama", 3, None])
        else:
            key = rng.choice([*CONFIG, "num_key_value_heads", "head_dim", "rms_norm_eps"])
            config[key] = rng.choice(CONFIG_VALUES + (["bert", "gpt2", "nope"] if key ==
                                                      "model_type" else []))
        argv = list(rng.choice(BASES[2:4] + BASES[5:6]))
        what.append(f"config {json.dumps(config)[:80]}")
    files = {"model/config.json": json.dumps(config).encode()}
    return Case("deplo", argv, files, " + ".join(what))


# ---------------------------------------------------------------------------------------------
# Running a case


class Hang(BaseException):
    """Raised by SIGALRM; a BaseException so that no `except Exception` in deplo swallows it."""


def _on_alarm(signum, frame):
    raise Hang()


def run_case(case: Case, timeout: float) -> Outcome:
    from deplo.tools import deplo_main, deplo_opt

    main = {"deplo": deplo_main.main, "deplo-opt": deplo_opt.main}[case.tool]
    with tempfile.TemporaryDirectory(prefix="deplo-fuzz-") as tmp:
        for name, data in case.files.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / name).write_bytes(data)
        argv = [a.replace("{dir}", tmp) for a in case.argv]
        out, err = io.StringIO(), io.StringIO()
        old_cwd = os.getcwd()
        os.chdir(tmp)  # relative paths a mutation makes (`-o abc`) land in the case's folder
        old_stdin, old_handler = sys.stdin, signal.signal(signal.SIGALRM, _on_alarm)
        sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as e:
                    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                    if isinstance(e.code, str):
                        err.write(e.code)
        except Hang:
            return Outcome("hang", detail=f"ran past {timeout:g} s", seconds=timeout)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - exactly what the fuzzer looks for
            frames = [f for f in traceback.extract_tb(e.__traceback__) if "/xdsl/" in f.filename
                      or f.filename.startswith(str(ROOT)) and "-packages" not in f.filename]
            frames = frames or [None]
            at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames[-1] else ""
            return Outcome("traceback", 1, traceback.format_exc(), time.perf_counter() - start,
                           type(e).__name__ + at)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old_handler)
            sys.stdin = old_stdin
            os.chdir(old_cwd)
        seconds = time.perf_counter() - start
        text = err.getvalue().replace(tmp, "DIR")
        if "Traceback (most recent call last)" in text:
            return Outcome("traceback", code, text, seconds)
        if code and not text.strip():
            return Outcome("silent", code, "non-zero exit without a message", seconds)
        return Outcome("error" if code else "ok", code, text, seconds)


def make_case(seed: int, index: int, corpus: list[Seed], cli_share: float) -> Case:
    rng = random.Random(f"{seed}:{index}")
    return deplo_case(rng) if rng.random() < cli_share else deplo_opt_case(rng, corpus)


def signature(outcome: Outcome) -> str:
    """One line per distinct failure: its kind and where it was raised."""
    return f"{outcome.kind} {outcome.where}".strip()


def fuzz(seed: int = 0, count: int = 300, timeout: float = 10.0, cli_share: float = 0.1,
         only: int | None = None, verbose: bool = False, log=print) -> list[tuple[int, Case, Outcome]]:
    """Run `count` cases of `seed`; return the failures (index, case, outcome)."""
    corpus = load_corpus()
    failures = []
    kinds: Counter[str] = Counter()
    slowest = (0.0, -1)
    indices = [only] if only is not None else range(count)
    for i in indices:
        case = make_case(seed, i, corpus, cli_share)
        outcome = run_case(case, timeout)
        kinds[outcome.kind] += 1
        slowest = max(slowest, (outcome.seconds, i))
        if verbose:
            log(f"case {i} [{outcome.kind} {outcome.code} {outcome.seconds:.2f}s] {case.tool} "
                f"{' '.join(case.argv)}  ({case.what})")
            if only is not None:
                log(outcome.detail)
        if outcome.kind in ("traceback", "hang", "silent"):
            failures.append((i, case, outcome))
            log(f"FAIL case {i}: {signature(outcome)}: {case.tool} {' '.join(case.argv)}  "
                f"({case.what})")
    n = len(indices)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    summary += f"; slowest case {slowest[1]}: {slowest[0]:.1f} s"
    if failures:
        sigs = Counter(signature(o) for _, _, o in failures)
        for s, k in sigs.most_common():
            log(f"  {k} x {s}")
        log(f"fuzz seed {seed}: {n} mutations, {len(failures)} failed ({summary})")
    else:
        log(f"fuzz seed {seed}: {n} mutations ({summary}): no traceback, no hang")
    return failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fuzz.py", allow_abbrev=False,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=300, help="mutations to run")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per case (a hang)")
    p.add_argument("--cli-share", type=float, default=0.1, help="share of deplo command lines")
    p.add_argument("--only", type=int, default=None, help="run case K only (with its output)")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = p.parse_args(argv)
    failures = fuzz(args.seed, args.count, args.timeout, args.cli_share, args.only, args.verbose)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
