"""`deplo tune -c EXPR | MODEL [--budget N] [--db PATH] [--workers N] [--ray ADDRESS]` and
`deplo tune --report [--plot out.png]`; `tuned_schedule`, the store's best plans as the plan
file that `deplo compile|run|bench --db` and the torch.compile backend pin."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_db(p) -> None:
    p.add_argument("--db", default=None, metavar="PATH",
                   help="the tuning store whose best plans are used (default: the one under "
                        "the cache directory, when it exists)")


def add_arguments(p, add_source, int_in, output_path) -> None:
    from deplo.hardware import add_gpu_model_argument

    add_source(p)  # with --db; --schedule is refused (a search starts from the heuristic),
    # --schedule-out writes the best plans found
    p.add_argument("--budget", type=int_in(1, 10**6), default=64,
                   help="evaluations per distinct kernel, stored ones included")
    p.add_argument("--time", type=_seconds, default=None, metavar="S",
                   help="stop searching after S seconds (then the chosen plans are checked; "
                        "--calibrate: no new plan after S seconds)")
    p.add_argument("--workers", type=int_in(1, 1025), default=1,
                   help="evaluations in this many local processes (kernels searched at once)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="evaluate as Ray tasks on a cluster: auto, an address, or 'local' "
                        "(pip install 'deplo[ray]')")
    add_gpu_model_argument(p)
    p.add_argument("--report", action="store_true",
                   help="print per kernel in the store the default and best time and the speedup")
    p.add_argument("--plot", type=output_path, default=None, metavar="OUT.png",
                   help="with --report: draw the speedups (matplotlib)")
    p.add_argument("--calibrate", type=int_in(1, 10**4), default=None, metavar="N",
                   help="no search: the heuristic's plan and N-1 random plans of each kernel, "
                        "predicted by the model and measured on the GPU (rank correlation)")
    p.add_argument("-o", "--output", type=output_path, default=None,
                   help="with --calibrate or --report: write the rows (and figures) as JSON")


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        s = float(text)
    except ValueError:
        s = -1.0
    if not (math.isfinite(s) and s > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return s


def store_path(db: str | None) -> Path:
    from deplo.tuning.store import default_path

    return Path(db) if db else default_path()


def _missing(path: Path):
    from deplo.tuning.store import StoreError

    return StoreError(f"{path}: no such tuning store (`deplo tune --db {path}` makes one)")


def tuned_schedule(db: str | None, user: str | None, verbose: int = 0) -> str | None:
    """The plan file text: the user's --schedule, with the store's best plans as its
    fallback (the user's pins win, and must each match a kernel; the store's need not). The
    default store is read only if it exists."""
    path = store_path(db)
    if not path.exists():
        if db is None:
            return user
        raise _missing(path)
    from deplo.passes.tile.plan import Pin, pins_json, read_plans
    from deplo.tuning.store import TuningStore
    from deplo.tuning.tune import stored_schedule

    with TuningStore(path) as store:
        plans = stored_schedule(store)["kernels"]
    if not plans:
        return user
    if verbose:
        print(f"deplo: {len(plans)} tuned plan(s) in {path}", file=sys.stderr)
    where, pins = read_plans(user) if user else ("schedule", {})
    store_pins = {key: Pin(p["name"], p["kind"], p["knobs"], required=False)
                  for key, p in plans.items()}
    return json.dumps(pins_json(store_pins | pins, where))


def cmd_tune(args, compile_program) -> int:
    from deplo.tools.errors import writing
    from deplo.tuning.store import TuningStore
    from deplo.tuning.tune import Evaluator, program_check, report_rows, tune

    path = store_path(args.db)
    if args.db and not path.parent.is_dir():  # (the default store's directory is made)
        from deplo.tools.errors import UsageError

        raise UsageError(f"--db {args.db}: no directory {path.parent} (create it first)")
    if args.plot and not args.report:
        from deplo.tools.errors import UsageError

        raise UsageError("--plot draws the report: use it with --report")
    if args.report:
        if not path.exists():
            raise _missing(path)
        with TuningStore(path) as store:
            rows = report_rows(store)
        print(format_report(rows, path))
        if args.output:
            with writing(args.output):
                Path(args.output).write_text(json.dumps({"store": str(path), "kernels": rows},
                                                        indent=1) + "\n")
            print(f"wrote {args.output}")
        if args.plot:
            with writing(args.plot):
                plot_report(rows, args.plot)
            print(f"wrote {args.plot}")
        return 0
    from deplo.hardware import model_for
    from deplo.runtime.gpu import gpu_probe
    from deplo.tools.errors import UsageError

    if args.output and not args.calibrate:
        raise UsageError("-o goes with --calibrate or --report (the tuner's results go to the "
                         "store: --db)")
    if args.schedule:
        raise UsageError("--schedule: tuning starts from the heuristic's plans (a plan file "
                         "pins plans for compile, run and bench; they read the store: --db)")
    if args.schedule_out and (args.calibrate or args.report):
        raise UsageError("--schedule-out writes the plans a search found: not with "
                         "--calibrate or --report")
    if args.calibrate and args.ray:
        raise UsageError("--calibrate evaluates here (--workers), not on Ray")
    on_gpu, device = gpu_probe()
    args.gpu_model = model_for(args.gpu_model, on_gpu, device)
    if args.calibrate:
        return cmd_calibrate(args, compile_program, on_gpu)
    compiled = compile_program(args, runnable=True, tuned=False)  # from the heuristic's plans
    measure = gpu_measure(compiled) if on_gpu else None
    if args.ray:
        _ray_answers(args.ray)
    try:
        evaluator = Evaluator(args.gpu_model, args.workers, args.ray, measure)
    except (ConnectionError, ValueError) as e:  # ray.init: no cluster, a malformed address
        raise UsageError(f"--ray {args.ray}: {e}") from None
    from rich.progress import Progress

    with TuningStore(path) as store, Progress(transient=False) as bar:
        rows: dict[str, int] = {}

        def progress(task, done, best_us):
            if task.key not in rows:
                rows[task.key] = bar.add_task(f"{task.name} [{task.key[:8]}]", total=args.budget)
            text = f"{task.name} [{task.key[:8]}]" + (f" {best_us:.2f} us" if best_us else "")
            bar.update(rows[task.key], completed=done, description=text)

        try:
            reports = tune(compiled, store, args.budget, evaluator,
                           program_check(compiled, "gpu" if on_gpu else "cpu"),
                           workers=args.workers, progress=progress, seconds=args.time,
                           start_from_choice=args.rank)
        except KeyboardInterrupt as e:
            e.add_note(f"every evaluation finished so far is in {path}: a rerun resumes")
            raise
        finally:
            evaluator.close()
    if not reports:
        print("deplo: the program has no kernels to tune")
    for r in reports:
        best = r.best
        line = (f"deplo: {r.task.name} [{r.task.key}] x{r.task.count}: {r.evaluated} evaluated, "
                f"{r.stored} stored; default {_us(r.default_us)}, best {_us(best and best.time_us)}"
                f" ({evaluator.name})")
        if r.rejected:
            line += f"; {len(r.rejected)} plan(s) rejected by the check"
        print(line)
    print(f"deplo: the store is {path}")
    if args.schedule_out:  # the best plan of each kernel of this program: a --schedule file
        from deplo.tuning.tune import pins

        best = {r.task.key: (r.best.name, r.best.plan) for r in reports if r.best}
        with writing(args.schedule_out):
            Path(args.schedule_out).write_text(json.dumps(pins(best), indent=1) + "\n")
        print(f"wrote {args.schedule_out} ({len(best)} plan(s))")
    return 0


def gpu_measure(compiled, gpu_lock=None):
    """The GPU evaluator: the program with the candidate pinned, the kernel's launches timed
    (under `gpu_lock` where several processes share the GPU)."""
    from deplo.tools.api import Compiled
    from deplo.tools.profile import measure
    from deplo.tuning.tune import pins

    def evaluate(task, knobs):
        pinned = Compiled(compiled.program, 0, json.dumps(pins({task.key: (task.name, knobs)})),
                          strict=False, rank=False,  # only this kernel is timed, by its name:
                          launch_fusion=False)  # not as a part of a fused launch
        try:
            per_kernel = measure(pinned, warmup=2, iters=10, baselines=False,
                                gpu_lock=gpu_lock)["per_kernel_us"]
        except Exception:  # noqa: BLE001 - a plan that does not build or run failed
            return None
        times = [us for name, us in per_kernel.items()
                 if name == task.name or name.startswith(task.name + "_sum")]
        return sum(times) if times else None

    return evaluate


def _ray_answers(address: str) -> None:
    """A HOST:PORT that takes a connection within 5 s: ray.init retries an unreachable one for
    minutes. (auto and local are Ray's to resolve.)"""
    import socket

    from deplo.tools.errors import UsageError

    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'deplo[ray]'") from None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address in ("auto", "local") or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise UsageError(f"--ray {address}: nothing answers there ({e.strerror or e})") from None


def cmd_calibrate(args, compile_program, on_gpu: bool) -> int:
    import functools
    import json

    from rich.progress import Progress

    from deplo.runtime.cache import write_atomic
    from deplo.tools.errors import writing
    from deplo.tuning.calibrate import calibrate, format_calibration

    def write(report: dict) -> None:  # whole after every plan: a run cut short keeps its rows
        if args.output:
            with writing(args.output):
                write_atomic(args.output, json.dumps(report, indent=1))

    make = functools.partial(compile_program, args, True, False)  # picklable for the workers
    with Progress(transient=True) as bar:
        row = bar.add_task("plans", total=None)

        def on_row(report: dict, total: int) -> None:
            write(report)
            bar.update(row, completed=len(report["rows"]), total=total)

        report = calibrate(make, args.calibrate, args.gpu_model, on_gpu, args.workers,
                           args.seed or 0, on_row, args.time)
    write(report)
    print(format_calibration(report))
    if args.output:
        print(f"wrote {args.output}")
    return 0


def _us(t: float | None) -> str:
    return f"{t:.2f} us" if t else "-"


def format_report(rows: list[dict], path) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    from deplo.runtime.bench import geomean

    table = Table(title=f"tuning store {path}")
    for col in ("kernel", "key", "evaluations", "rejected", "evaluator", "default us", "best us",
                "speedup"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["key"], str(r["evaluations"]), str(r["rejected"]),
                      r["evaluator"] or "-", _us(r["default_us"]).removesuffix(" us"),
                      _us(r["best_us"]).removesuffix(" us"),
                      f"{r['speedup']:.2f}x" if r["speedup"] else "-")
    out = StringIO()
    Console(file=out, width=140, color_system=None).print(table)
    g = geomean([r["speedup"] for r in rows])
    return out.getvalue() + (f"geomean speedup {g:.2f}x over {len(rows)} kernel(s)\n" if g else "")


def plot_report(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["speedup"]]
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(rows) + 2), 4.5))
    ax.bar([f"{r['name']} {r['key'][:6]}" for r in rows], [r["speedup"] for r in rows])
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    plt.setp(ax.get_xticklabels(), ha="right")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylabel("best / default speedup")
    ax.set_title("deplo tune (" + ", ".join(sorted({r["evaluator"] for r in rows})) + ")")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
