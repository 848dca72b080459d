"""The shape every tile pass shares: walk the module's tile kernels once, and on each carry out
this pass's step of the kernel's plan, reading its decisions from the plan's knobs.

    tile.kernel @k(...) plan matmul(...) {..., threads_m = 16, threads_n = 16, ...}
        done ["tile-split-k", "tile-tensor-core", "tile-register-tile"]
    -- tile-map-2d -->
    tile.kernel @k(...) plan matmul(...) {...} done [..., "tile-map-2d"]   (+ the mapping)

Rules, the same for every pass:
- a kernel without a plan is planned first (passes/tile/planner.py), as `tile-plan` would, but
  with a class that has this step and its options' knobs where one can (so that
  `loop-to-tile,tile-map-2d{threads-m=8}` maps a small matmul that the heuristic would not);
- a pass acts only on kernels whose plan has its step, once (`done` records it; running it
  again is a no-op), and never after a step its plan puts later;
- a pass's options are the knobs it owns: given on the command line (`tile-map-2d{threads-m=8}`)
  they pin those knobs; the plan's earlier decisions stay and its later ones are re-planned
  around them. Kernels whose plan has other knobs (another class) are left alone. An illegal
  value is an error naming the pass, the option, the kernel and the rule it breaks.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from deplo.analysis.nest import tile_kernels
from deplo.dialects import tile
from deplo.dialects.tile_plan import KNOBS, Plan, PlanError
from deplo.passes.tile import planner

MAPPING_STEPS = frozenset({"tile-map-2d", "tile-map-grid", "tile-map-threads"})
"""Steps that give a kernel its blocks and threads."""


class PassOptionError(VerifyException):
    """A tile pass's option that cannot be carried out (a user error)."""


@dataclass(frozen=True)
class KernelPass(ModulePass):
    """Carries out one step of each kernel's plan (`carry_out`); fields are its knobs. A step
    after a later one of its plan is an error — except that a named pipeline's step
    (`resumes`) that a later one run by hand has passed over is left out, unless it is the
    one that maps the kernel to threads (the kernel would stay serial)."""

    resumes: ClassVar[bool] = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        given, kinds, taken = self.options(), [], False
        for kernel in tile_kernels(op):
            plan = self.plan_for(kernel)
            if given:  # (for the warning below)
                kinds.append(f"@{kernel.sym_name.data} {plan.kind if plan else 'unplanned'}")
            if plan is None or self.name not in plan.steps():
                continue
            taken = True  # a kernel the options are for
            if self.name in kernel.done_steps:
                continue
            steps = plan.steps()
            here = steps.index(self.name)
            later = [s for s in steps[here + 1 :] if s in kernel.done_steps]
            if later and self.resumes and self.name not in MAPPING_STEPS:
                continue  # passed over by hand: the kernel goes on from its own last step
            if later:
                raise PassOptionError(
                    f"{self.name}: kernel @{kernel.sym_name.data}: runs after {later[0]}, which "
                    f"its {plan.kind} plan carries out later"
                )
            try:
                self.carry_out(kernel, plan)
            except PassOptionError as e:  # a step skipped before this one is the likely cause
                missing = [s for s in steps[: steps.index(self.name)] if s not in kernel.done_steps]
                if not missing:
                    raise
                raise PassOptionError(f"{e} ({missing[0]}, an earlier step of its plan, has not "
                                      "run)") from None
            kernel.mark_done(self.name)
        if given and not taken:  # a warning, not an error: a pipeline may serve other programs
            print(f"warning: {self.name}{{{_spec(given)}}}: no kernel has this step, so nothing "
                  f"takes the options ({', '.join(kinds) or 'no tile kernels'})", file=sys.stderr)

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        raise NotImplementedError

    def options(self) -> dict[str, object]:
        return {
            f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None
        }

    def plan_for(self, kernel: tile.KernelOp) -> Plan | None:
        given = self.options()
        name = kernel.sym_name.data
        try:
            plan = planner.ensure_plan(kernel, self.name, tuple(given))
            if not given or self.name not in plan.cls.step_names():
                return plan
            values = {}
            for k, v in given.items():
                try:
                    values[k] = KNOBS[k].convert(v)
                except ValueError as e:
                    raise PlanError(name, k, str(e)) from None
            first = next(iter(values))
            opts = plan.cls.implied(values) | values
            if not set(opts) & set(plan.cls.knob_names(plan.knob_dict)):
                return plan  # knobs of a step this plan's mode skips (SIMT attention's buffers)
            if all(plan.knob(k) == v for k, v in opts.items()):
                return plan
            if self.name in kernel.done_steps:
                raise PlanError(name, first, f"{self.name} has already carried out this plan")
            for k, v in opts.items():  # what an option implies may undo a step already done
                owner = plan.cls.owner(k, plan.knob_dict)
                if k not in values and owner in kernel.done_steps and plan.knob(k) != v:
                    raise PlanError(name, first, f"needs {k} = {_text(v)}, but {owner} has "
                                                 f"already carried out {k} = {_text(plan.knob(k))}")
            steps = plan.cls.step_names()
            earlier = steps[: steps.index(self.name)]
            keep = {k: v for k, v in plan.knobs
                    if plan.cls.owner(k, plan.knob_dict) in earlier and k not in opts}
            names = plan.cls.knob_names(keep | opts)
            keep = {k: v for k, v in keep.items() if k in names}  # a mode switch drops the rest
            new = planner.complete(name, plan.kind, plan.facts, keep | opts, prefer=set(values))
        except (PlanError, ValueError) as e:
            raise PassOptionError(f"{self.name}{{{_spec(given)}}}: {e}") from None
        kernel.set_plan(new)
        return new


def _spec(given: dict[str, object]) -> str:
    """Options as the pass syntax writes them: `threads-m=8 threads-n=16`."""
    return " ".join(f"{k.replace('_', '-')}={_text(v)}" for k, v in given.items())


def _text(v: object) -> str:
    """A knob value as the IR and the option syntax write it (true, not True)."""
    return str(v).lower() if isinstance(v, bool) else str(v)
