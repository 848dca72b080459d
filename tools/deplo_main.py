"""`deplo`: compile and run PyTorch programs.

    deplo compile -c 'torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))' --ir loop -v
    deplo compile -c EXPR --ir cuda -o out.cu
    deplo run -c EXPR --check                       # CPU runtime (default without a GPU)
    deplo run -c EXPR --check --target interp --ir tensor
    deplo run -c EXPR --check --target gpu
    deplo compile Qwen/Qwen2.5-7B --ir tensor           # a model id (offline) or an HF directory
    deplo compile ./tiny-llama --ir loop -v --num-layers 2
    deplo run ./tiny-llama --target interp --ir tensor --check   # logits vs transformers
    deplo compile -c EXPR --ir cuda -v               # + ptxas registers/smem/spills per kernel
    deplo bisect -c EXPR | MODEL                     # the first pass after which it mismatches
    deplo bench --suite llm --dtype bf16 --seq 128 -o bench.json   # timed where a GPU is
    deplo compile -c EXPR --plans                    # every kernel's plan and its space
    deplo compile -c EXPR --schedule-out p.json      # write every kernel's plan ...
    deplo run -c EXPR --schedule p.json --check      # ... and pin them (edit a knob in between)
    deplo tune -c EXPR --budget 64                   # search plans; compile/run/bench then use them
    deplo tune --report --plot tune.png              # per kernel: default vs best

User errors (an expression that does not evaluate, an unsupported op, malformed IR, a g++ or
NVRTC failure, no GPU) print one clear message and exit 1 — never a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from deplo.tools.driver import LEVELS
from deplo.tools.errors import UsageError, writing


def _int_in(low: int, high: int | None = None):
    """An argparse type: an int in [low, high)."""
    def parse(text: str) -> int:
        n = int(text)  # a ValueError: argparse's "invalid value"
        if n < low or (high is not None and n >= high):
            raise argparse.ArgumentTypeError(
                f"expected an integer in [{low}, {high}), got {n}" if high is not None
                else f"expected an integer >= {low}, got {n}")
        return n

    parse.__name__ = "integer"
    return parse


def _output_path(text: str) -> str:
    """An argparse type: a file whose directory exists (checked up front, not after the run)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    if not path.parent.exists():
        raise argparse.ArgumentTypeError(f"no directory {path.parent} (create it first)")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path.parent} is not a directory")
    return text


def _schedules(text: str) -> str:
    from deplo.runtime.cpu.schedules import parse_schedule

    for name in text.split(",") if text != "all" else []:
        try:
            parse_schedule(name.strip())
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _positive_ints(text: str) -> str:
    try:
        for n in (t for t in text.split(",") if t.strip()):
            _int_in(1)(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    return text


def _arch(text: str) -> str:
    if not re.fullmatch(r"sm_\d{2,3}[af]?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an NVRTC arch like sm_90")
    return text


SEED = _int_in(0, 2**64)


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", nargs="?", default=None, metavar="MODEL",
                   help="a Hugging Face model directory or id (e.g. Qwen/Qwen2.5-7B), offline")
    p.add_argument("-c", "--expr", default=None, metavar="EXPR",
                   help="a PyTorch expression in deplo's expression language, not arbitrary "
                        "Python: torch/nn/F/math calls with keyword arguments, attributes and "
                        "methods, arithmetic (incl. @ and <<), indexing; torch.randn(...) calls "
                        "are the inputs")
    p.add_argument("--layer", type=_int_in(0, 2**31), default=None,
                   help="compile only decoder layer N")
    p.add_argument("--num-layers", type=_int_in(1, 2**31), default=None,
                   help="truncate the model to K layers")
    p.add_argument("--seq-len", type=_int_in(1, 2**31), default=None,
                   help="sequence length of the model input (default 8)")
    p.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default=None,
                   help="a model's weights and activations (default fp32, whatever the "
                        "checkpoint stores); an expression sets its own")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="-v: list the passes run; -vv: print each pass as a diff")
    p.add_argument("--seed", type=SEED, default=None, help="seed for inputs and weights")
    _add_schedule(p)


def _add_schedule(p: argparse.ArgumentParser) -> None:
    p.add_argument("--schedule", default=None, metavar="PLANS.json",
                   help="pin the plans of the kernels this file names (keyed by their "
                        "structural key; knobs left out are the heuristic's)")
    p.add_argument("--schedule-out", type=_output_path, default=None, metavar="PLANS.json",
                   help="write the plan of every kernel (a file --schedule takes)")
    p.add_argument("--no-rank", dest="rank", action="store_false",
                   help="the heuristic's plans alone: no cost-model choice among its shortlist "
                        "for big matmuls")
    p.add_argument("--no-launch-fusion", dest="launch_fusion", action="store_false",
                   help="one launch a kernel: no kernel-horizontal-fuse")
    from deplo.tools.tune_cmd import add_db

    add_db(p)


def build_parser() -> argparse.ArgumentParser:
    from deplo.hardware import add_gpu_model_argument

    parser = argparse.ArgumentParser(prog="deplo", description="deplo: PyTorch -> CUDA compiler",
                                     allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)

    def add_parser(name: str, **kw) -> argparse.ArgumentParser:
        return sub.add_parser(name, allow_abbrev=False, **kw)  # `--out` is not `--output`

    c = add_parser("compile", help="print the program at one IR level")
    _add_source(c)
    c.add_argument("--ir", choices=[*LEVELS, "tir"], default="cuda", help="the level to print")
    c.add_argument("-o", "--output", type=_output_path, default=None,
                   help="write to this file instead of stdout")
    c.add_argument("--debug-info", action="store_true",
                   help="print each torch/tir op's origin (aten op, module, source line), as "
                        "MLIR prints locations; kernels list theirs either way")
    c.add_argument("--plans", action="store_true",
                   help="print every kernel's plan and how many legal plans each kind it can "
                        "take has, instead of the IR")
    add_gpu_model_argument(c)

    r = add_parser("run", help="run the program, optionally checking it against PyTorch")
    _add_source(r)
    r.add_argument("--target", choices=["cpu", "gpu", "interp"], default=None,
                   help="cpu: the .cu on the CPU shim (default without a GPU); gpu: NVRTC + "
                        "driver; interp: the numpy interpreter of --ir")
    r.add_argument("--ir", choices=["torch", "tensor", "tir", "loop"], default=None,
                   help="the level the interpreter runs (with --target interp; default loop)")
    r.add_argument("--check", action="store_true", help="compare with PyTorch eager")
    r.add_argument("--bench", action="store_true",
                   help="how fast it is: measured on a GPU against eager and torch.compile, "
                        "else predicted by the sm_90 model (nothing runs)")
    r.add_argument("--profile", action="store_true", help="with --bench: one row per kernel")
    r.add_argument("-o", "--output", type=_output_path, default=None, metavar="PROF.json",
                   help="with --bench: write the profile as JSON")
    add_gpu_model_argument(r)
    r.add_argument("--fiber-schedules", type=_schedules, default=None, metavar="NAMES",
                   help="the CPU runtime's fiber schedules (the order CUDA threads run in), "
                        "comma-separated (e.g. LR-fwd,EG-rev) or 'all'")

    bi = add_parser("bisect", help="run after every pass on the CPU and name the first pass "
                                   "after which the result no longer matches PyTorch")
    _add_source(bi)
    bi.add_argument("-p", "--pipeline", default="to-cuda",
                    help="the passes to check, a named pipeline or a pass list (default to-cuda)")
    bi.add_argument("--all", action="store_true", help="keep going after the first mismatch")

    b = add_parser("bench", help="the kernel benchmark suite: static figures without a GPU, "
                                 "timings against PyTorch eager and torch.compile with one")
    b.add_argument("--suite", choices=["llm", "decode", "tiny"], default="llm",
                   help="llm: TinyLlama-1.1B and Qwen2.5-7B layer kernels; decode: the same "
                        "at one token over a cache of --seq keys; tiny: small shapes")
    b.add_argument("--dtype", default="fp32,bf16", help="comma-separated: fp32, bf16, fp16")
    b.add_argument("--seq", type=_positive_ints, default=None,
                   help="comma-separated sequence lengths (llm: 32,128,512; decode: the "
                        "cache's, 512,2048)")
    b.add_argument("--model", default=None, help="comma-separated model names (default: the suite's)")
    b.add_argument("--kernel", default=None, help="comma-separated kernel names (default: all)")
    b.add_argument("-o", "--output", type=_output_path, default=None,
                   help="write the JSON report to this file")
    b.add_argument("--arch", type=_arch, default="sm_90", help="NVRTC target of the static figures")
    b.add_argument("--no-gpu", action="store_true", help="static figures only, even with a GPU")
    b.add_argument("--warmup", type=_int_in(0, 10**6), default=10, help="untimed runs before timing")
    b.add_argument("--iters", type=_int_in(1, 10**6), default=50,
                   help="timed runs (the median is reported)")
    b.add_argument("--seed", type=SEED, default=None, help="seed of the random inputs")
    b.add_argument("-q", "--quiet", action="store_true", help="no per-case progress lines")
    add_gpu_model_argument(b)
    _add_schedule(b)

    from deplo.tools.tune_cmd import add_arguments

    t = add_parser("tune", help="search each distinct kernel's plans (SP-MCTS), evaluated on the "
                                "GPU or by the sm_90 model, and store the best that passes the "
                                "check against PyTorch")
    add_arguments(t, _add_source, _int_in, _output_path)

    from deplo.tools import explore, generate

    e = add_parser("explore", help="the whole pipeline of one program as one self-contained "
                                   "HTML page: passes with their IR and diffs, kernels, speed")
    _add_source(e)
    explore.add_arguments(e)

    g = add_parser("generate", help="greedy decoding: the prompt, then --max-new-tokens ids, "
                                    "with one compiled program")
    generate.add_arguments(g, _int_in, SEED)
    return parser


def _target(args) -> str:
    """--target, else the GPU where there is one; --target gpu without one is a UsageError."""
    from deplo.runtime.gpu import gpu_probe

    if args.target == "gpu" and not (probe := gpu_probe())[0]:
        raise UsageError(f"--target gpu: {probe[1]}; use --target cpu (the CPU runtime)")
    return args.target or _default_target()


def _default_target() -> str:
    from deplo.runtime.gpu import gpu_probe

    ok, _ = gpu_probe()
    return "gpu" if ok else "cpu"


def _compile(args, runnable: bool, tuned: bool = True):
    """The Compiled program for -c EXPR or MODEL (models: meta device unless `runnable`), with
    the tuning store's plans and --schedule's pinned unless not `tuned` (the heuristic's)."""
    from deplo.frontend.errors import FrontendError
    from deplo.tools.api import Compiled, capture
    from deplo.tools.tune_cmd import tuned_schedule

    if (args.expr is None) == (args.model is None):
        raise FrontendError("give either MODEL or -c EXPR")
    schedule = tuned_schedule(args.db, args.schedule, args.verbose) if tuned else None

    def make(program) -> Compiled:
        return Compiled(program, args.verbose, schedule, rank=tuned and args.rank,
                        gpu_model=getattr(args, "gpu_model", None),
                        launch_fusion=args.launch_fusion)

    if args.expr is not None:
        if args.dtype is not None:
            raise UsageError("--dtype is for a MODEL; an expression sets its own "
                             "(torch.randn(..., dtype=torch.bfloat16))")
        given = [f"--{k.replace('_', '-')}" for k in ("layer", "num_layers", "seq_len")
                 if getattr(args, k) is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: for a MODEL; an expression's shapes are its "
                             "own (torch.randn(1, 128, 2048))")
        return make(capture(args.expr, seed=args.seed))
    from deplo.frontend.causal_lm import capture_model
    from deplo.frontend.models import DTYPES, resolve_model, stored_dtype

    stored = stored_dtype(resolve_model(args.model))
    if args.dtype is None and stored != "fp32":
        print(f"deplo: the checkpoint stores {stored}; compiled in fp32 (--dtype {stored} keeps "
              "it)", file=sys.stderr)
    program = capture_model(args.model, layer=args.layer, num_layers=args.num_layers,
                            seq_len=args.seq_len or 8, materialize=runnable, seed=args.seed or 0,
                            dtype=DTYPES[args.dtype or "fp32"])
    for note in program.notes:
        print(f"deplo: {note}", file=sys.stderr)
    return make(program)


def _write_plans(plans: dict, path: str | None) -> None:
    if path:
        import json

        with writing(path), open(path, "w") as f:
            json.dump(plans, f, indent=1)
            f.write("\n")
        print(f"deplo: wrote the plans of {len(plans['kernels'])} kernel(s) to {path}",
              file=sys.stderr)


def cmd_compile(args) -> int:
    compiled = _compile(args, runnable=False)
    level = "tensor" if args.ir == "tir" else args.ir
    if args.plans:
        from deplo.tools.kernel_list import plan_spaces

        text = "\n".join(plan_spaces(compiled.planned())) + "\n"
    else:
        text = compiled.text(level, args.debug_info)
    if args.output:
        with writing(args.output), open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if level == "cuda" and args.verbose:
        for name, r in compiled.ptxas("sm_90").items():
            print(f"deplo: ptxas sm_90 {name}: registers {r.registers}, smem {r.smem_bytes} bytes "
                  f"(static), spills {r.spill_stores}/{r.spill_loads} bytes (stores/loads), "
                  f"stack {r.stack_bytes} bytes, barriers {r.barriers}", file=sys.stderr)
    _write_plans(compiled.plans() if args.schedule_out else {}, args.schedule_out)
    return 0


def cmd_bench(args) -> int:
    from deplo.runtime.bench import DECODE_KERNELS, KERNELS, MODELS, llm_suite
    from deplo.tools.bench import format_table, print_progress, run_bench, write_json

    def csv(text: str | None) -> list[str]:
        return [t.strip() for t in text.split(",") if t.strip()] if text else []

    models = None
    if args.model:
        unknown = [m for m in csv(args.model) if m not in MODELS]
        if unknown:
            print(f"deplo: error: unknown model {unknown[0]!r}; choose from "
                  f"{', '.join(MODELS)}", file=sys.stderr)
            return 1
        models = [MODELS[m] for m in csv(args.model)]
    try:
        seqs = [int(s) for s in csv(args.seq)] or None
        cases = llm_suite(csv(args.dtype), seqs, models, suite=args.suite)
    except ValueError as e:
        print(f"deplo: error: {e}", file=sys.stderr)
        return 1
    if args.kernel:
        names = DECODE_KERNELS if args.suite == "decode" else KERNELS
        if unknown := [k for k in csv(args.kernel) if k not in names]:
            print(f"deplo: error: unknown kernel {unknown[0]!r}; choose from "
                  f"{', '.join(names)}", file=sys.stderr)
            return 1
        cases = [c for c in cases if c.kernel in csv(args.kernel)]
    if args.schedule:
        from deplo.passes.tile.plan import read_plans

        read_plans(args.schedule)  # a file that cannot be used fails here, not in every case
    from deplo.tools.tune_cmd import tuned_schedule

    schedule = tuned_schedule(args.db, args.schedule)
    report = run_bench(cases, arch=args.arch, gpu=False if args.no_gpu else None, rank=args.rank,
                       launch_fusion=args.launch_fusion,
                       warmup=args.warmup, iters=args.iters, seed=args.seed or 0,
                       progress=None if args.quiet else print_progress, schedule=schedule,
                       gpu_model=args.gpu_model)
    if args.schedule_out:
        from deplo.passes.tile.plan import FORMAT

        merged = {k: v for c in report["cases"] for k, v in c.get("plans", {}).items()}
        _write_plans({"format": FORMAT, "kernels": merged}, args.schedule_out)
    if args.output:
        with writing(args.output):
            write_json(report, args.output)
    print(format_table(report))
    if args.output:
        print(f"wrote {args.output}")
    if "interrupted" in report:
        print(f"deplo: {report['interrupted']}: the table has the cases before it",
              file=sys.stderr)
        return 130
    return 0


def cmd_run(args) -> int:
    from deplo.tools.api import random_inputs

    if not args.bench and (args.profile or args.output):
        raise UsageError(f"{'--profile' if args.profile else '-o'} goes with --bench "
                         "(the profile it writes)")
    if args.bench and args.target == "interp":
        raise UsageError("--bench times the .cu: --target cpu (predicted) or gpu (measured)")
    if args.ir and args.target != "interp":
        raise UsageError(f"--ir {args.ir} is the level the interpreter runs: add --target interp "
                         "(the cpu and gpu targets run the .cu)")
    target = _target(args)
    compiled = _compile(args, runnable=True)
    if args.bench:
        rc = _bench_run(compiled, args, target)
        if not args.check:
            return rc
    level = {"tir": "tensor", None: "loop"}.get(args.ir, args.ir)
    inputs = random_inputs(compiled.program, args.seed)
    n = len(compiled.program.example_inputs)
    schedules = [None]
    if target == "cpu" and args.fiber_schedules:
        from deplo.runtime.cpu import DEFAULT_SCHEDULES

        names = args.fiber_schedules
        schedules = list(DEFAULT_SCHEDULES) if names == "all" else names.split(",")
    exe = compiled.executable(target, level if target == "interp" else None)
    from deplo.runtime.memory_plan import memory_lines

    for line in memory_lines(exe) if args.verbose else ():
        print(f"deplo: memory {line}", file=sys.stderr)
    what = f"interp ({level})" if target == "interp" else target
    failed = False
    reference = compiled.program.reference(inputs[:n]) if args.check else None
    for schedule in schedules:
        outputs = compiled.program.as_outputs(
            exe.run(inputs, schedule=schedule) if schedule else exe.run(inputs))
        label = what + (f" [{schedule}]" if schedule else "")
        shapes = ", ".join(f"{tuple(o.shape)} {o.dtype}" for o in outputs)
        if reference is None:
            print(f"{label}: ran, outputs {shapes}")
            continue
        result = compiled.judge(outputs, inputs, reference)
        print(f"{label}: {result.line()}")
        failed |= not result.ok
    if target != "interp":
        _write_plans(compiled.plans() if args.schedule_out else {}, args.schedule_out)
    return 1 if failed else 0


def _bench_run(compiled, args, target: str) -> int:
    """`deplo run --bench`: predicted by the model without a GPU; measured with one."""
    from deplo.hardware import model_for
    from deplo.tools.profile import format_profile, profile, write_profile

    measured, device = None, ""
    if target == "gpu":
        from deplo.runtime.gpu import gpu_probe
        from deplo.tools.profile import measure

        measured = measure(compiled, seed=args.seed or 0)
        device = gpu_probe()[1]
    gpu_model = model_for(args.gpu_model, measured is not None, device)
    report = profile(compiled, gpu_model, measured and measured["per_kernel_us"])
    if measured:
        report["measured"] = {k: v for k, v in measured.items() if k != "per_kernel_us"}
    print(format_profile(report, rows=args.profile), end="")
    if args.output:
        with writing(args.output):
            write_profile(report, args.output)
        print(f"wrote {args.output}")
    _write_plans(compiled.plans() if args.schedule_out else {}, args.schedule_out)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from deplo.tools.errors import user_errors

    with user_errors("deplo") as status:
        if args.command == "bisect":
            from deplo.tools.bisect import cmd_bisect

            return cmd_bisect(args, _compile(args, runnable=True))
        if args.command == "tune":
            from deplo.tools.tune_cmd import cmd_tune

            return cmd_tune(args, _compile)
        if args.command == "explore":
            from deplo.tools.explore import cmd_explore

            return cmd_explore(args, _compile(args, runnable=args.check),
                               args.expr or args.model)
        if args.command == "generate":
            from deplo.tools.generate import cmd_generate

            return cmd_generate(args, _target(args))
        return {"compile": cmd_compile, "run": cmd_run, "bench": cmd_bench}[args.command](args)
    return status.code


if __name__ == "__main__":
    sys.exit(main())
