"""`deplo explore -c EXPR | MODEL [--check] [-o out.html] [--open]`: the whole pipeline of one
program as one self-contained HTML page.

Why one file with the data as a JSON blob: it can be mailed or attached to an issue, opens with
no server and no network, and the page (tools/explore.html: markup, style and script in one
template) renders every view from the blob when it loads. What the blob holds:

- `passes`: every pass in order with its level, time, whether it changed the IR, the IR after it
  (only where it changed; otherwise the page shows the last one) and the diff against the IR
  before it (difflib, computed here so the page needs no diff library);
- `kernels`: per kernel its plan, launch, ptxas figures, the modules whose weights it reads, the
  sm_90 model's prediction, roofline and bound (and the GPU's time where one ran), its CUDA
  source and its `origin` (the torch ops it implements; origin.py);
- `torch_ops`: every torch op of the program (name, aten op, module, source line) with the
  kernels that implement it — the page highlights one from the other;
- `checks` (with --check): after every pass, the program run on the CPU against PyTorch (the
  bisect view: the first pass that changes the result is the first red one).
"""

from __future__ import annotations

import difflib
import html
import json
import re
from pathlib import Path

from deplo import origin

TEMPLATE = Path(__file__).with_name("explore.html")


def _pass_levels() -> list[tuple[str, str]]:
    """(pass spec, the level it belongs to) for the whole to-cuda pipeline, in order: each
    named pipeline's passes beyond the one before it belong to the level it ends at."""
    from deplo.passes.pipeline import LEVEL_PIPELINE, PIPELINES

    ends_at = {pipe: level for level, pipe in LEVEL_PIPELINE.items() if pipe}  # to-tir: tir
    out, done = [], 0
    for name, level in ends_at.items():
        passes = PIPELINES[name]
        out += [(p, level) for p in passes[done:]]
        done = len(passes)
    return out


def _cuda_by_kernel(source: str) -> dict[str, str]:
    """Each kernel's text in the .cu (the emitter puts a blank line before each kernel)."""
    body = source.split("// ---- kernels ----", 1)[-1]
    out = {}
    for chunk in re.split(r'\n\s*\n(?=// |extern "C")', body.strip("\n")):
        if m := re.search(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(', chunk):
            out[m.group(1)] = chunk.strip()
    return out


def explore_data(compiled, *, check: bool = False, gpu_model: str = "h100",
                 title: str = "") -> dict:
    from deplo.analysis.nest import tile_kernels
    from deplo.dialects import kernel
    from deplo.tools.driver import run_passes
    from deplo.tools.profile import profile

    start = compiled.program.module.clone()
    trace: list = []
    steps = [(compiled.pass_spec(p), level) for p, level in _pass_levels()]
    steps = [(p, level) for p, level in steps if p]
    run_passes(start, ",".join(p for p, _ in steps), schedule=compiled.plan_file(),
               strict=compiled.strict, trace=trace)
    before = origin.text(compiled.program.module)
    passes = [{"name": "import", "level": "torch", "seconds": 0.0, "changed": True,
               "ir": before, "diff": ""}]
    for (name, seconds, after), (_, level) in zip(trace, steps, strict=True):
        changed = after != before
        passes.append({
            "name": name, "level": level,
            "seconds": round(seconds, 4), "changed": changed, "ir": after if changed else None,
            "diff": "\n".join(difflib.unified_diff(before.splitlines(), after.splitlines(),
                                                   "before", "after", lineterm="", n=2))})
        before = after
    report = profile(compiled, gpu_model)
    plans = {k.sym_name.data: {"kind": k.the_plan.kind, "knobs": dict(k.the_plan.knobs),
                               "key": k.structural_key}
             for k in tile_kernels(compiled.module("tile")) if k.the_plan is not None}
    cuda = _cuda_by_kernel(compiled.cuda_source)

    def plan_of(name: str) -> dict | None:
        return plans.get(name, plans.get(name.removesuffix("_sum")))

    for name, parts in kernel.fused_parts(compiled.module("kernel")).items():  # each part's kind
        plans[name] = {"kind": "fused", "key": None, "knobs": {
            p: (plan_of(p) or {"kind": "-"})["kind"] for p in parts}}
    kernels = [{**row, "plan": plan_of(row["name"]), "cuda": cuda.get(row["name"], "")}
               for row in report["kernels"]]
    data = {"schema": "deplo-explore/1", "title": title, "passes": passes, "kernels": kernels,
            "torch_ops": _torch_ops(compiled.program.module, kernels),
            "summary": {k: report[k] for k in ("gpu_model", "predicted_us", "roofline_us",
                                               "launches") if k in report},
            "checks": _checks(compiled) if check else []}
    return data


def _torch_ops(module, kernels: list[dict]) -> list[dict]:
    """Every torch op of the program (its origin line parsed) with the kernels that implement it:
    the page links the two both ways."""
    lines = list(dict.fromkeys(line for op in module.walk() for line in origin.of_op(op)))
    return [{**origin.parse(line), "line": line,
             "kernels": [k["name"] for k in kernels if line in k["origin"]]} for line in lines]


def _checks(compiled) -> list[dict]:
    """The bisect view: the program run after every pass (the interpreters up to Loop IR, then
    the .cu on the CPU runtime; tools/bisect.py) against PyTorch on the same inputs."""
    from deplo.passes.pipeline import expand_pipeline
    from deplo.tools.api import random_inputs
    from deplo.tools.bisect import bisect

    program = compiled.program
    inputs = random_inputs(program, 0)
    reference = program.reference(inputs[: len(program.example_inputs)])
    steps = bisect(program.module, inputs, reference,
                   compiled.pass_spec(expand_pipeline("to-cuda")), keep_going=True,
                   schedule=compiled.plan_file(), strict=compiled.strict,
                   check=lambda outputs: compiled.judge(outputs, inputs, reference)).steps
    return [{"after": st.after.split("{")[0], "level": st.level, "how": st.how, "ok": st.ok,
             "line": st.comparison.line() if st.comparison else f"ERROR {st.error}",
             "seconds": round(st.seconds, 2)} for st in steps]


def render(data: dict) -> str:
    """The page: the template with the blob inlined (`</` escaped so no IR text ends the
    script element)."""
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (TEMPLATE.read_text().replace("{{TITLE}}", html.escape(data.get("title") or "deplo"))
            .replace("{{DATA}}", blob))


def add_arguments(p) -> None:
    p.add_argument("--check", action="store_true",
                   help="also run the program after every pass on the CPU against PyTorch")
    p.add_argument("-o", "--output", default="explore.html", metavar="OUT.html")
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument("--gpu-model", choices=["h100", "h200"], default="h100")


def cmd_explore(args, compiled, title: str) -> int:
    from deplo.tools.errors import writing

    page = render(explore_data(compiled, check=args.check, gpu_model=args.gpu_model,
                               title=title))
    with writing(args.output):
        Path(args.output).write_text(page)
    print(f"deplo: wrote {args.output} ({len(page) / 1e6:.2f} MB)")
    if args.open:
        import webbrowser

        webbrowser.open(Path(args.output).resolve().as_uri())
    return 0
