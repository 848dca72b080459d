"""tile-plan: every tile kernel gets its plan — the planner's heuristic, or the plan pinned for it
in a plan file — before any other tile pass carries a step of it out.

    tile.kernel @mm(...) grid(1, 1, 1) block(1, 1, 1) { ... }
    ->
    tile.kernel @mm(...) grid(1, 1, 1) block(1, 1, 1) key "5b0e9c0d8f2a1e47"
        plan matmul(chain = [200, 100], k = 300, ...) {splits = 1, mma = false, ...} { ... }

A plan file (`deplo compile --schedule-out`, `--schedule`; option `schedule`: its path, or the
JSON text itself) holds per kernel, keyed by the structural key of its Loop IR (planner.py), a
readable name, the kind (the class of schedule: dialects/tile_plan.py) and the knobs as a flat
object:

    {"format": "deplo-plans/1",
     "kernels": {"5b0e9c0d8f2a1e47": {"name": "matmul", "kind": "matmul",
                                      "knobs": {"splits": 1, "mma": false, "reg_m": 4, ...}}}}

Knobs left out are the heuristic's (made around the pinned ones). Kernels the file does not name
keep the heuristic's plan (option `kind`: of that kind where they can take it); a key that matches no kernel, an unknown field, class or knob, or an
illegal value is a one-line error naming the kernel and the knob. Plans under "fallback" (a
tuning store's, which `deplo run` puts under the user's file, named by "source") are used for
the kernels they match and need not match any. Kernels that already have a
plan keep it unless the file pins another, which is an error once a step of theirs is done.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from deplo.analysis.nest import tile_kernels
from deplo.dialects.tile_plan import CLASSES, PlanError
from deplo.passes.tile import planner

FORMAT = "deplo-plans/1"


class PlanFileError(VerifyException):
    """A plan file that cannot be used, in one line (a user error)."""


@dataclass(frozen=True)
class Pin:
    name: str
    kind: str
    knobs: dict
    required: bool = True  # False: a "fallback" plan, used only if the program has its kernel


def read_plans(source: str) -> tuple[str, dict[str, Pin]]:
    """(what to call the file in messages, its pins by key) from a path or the JSON text."""
    where = "schedule"
    text = source
    if not source.lstrip().startswith("{"):
        where = source
        try:
            text = Path(source).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise PlanFileError(f"{where}: cannot read the plan file: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanFileError(f"{where}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PlanFileError(f"{where}: expected an object with \"format\": \"{FORMAT}\"")
    if extra := set(data) - {"format", "kernels", "fallback", "source"}:
        raise PlanFileError(f"{where}: unknown field '{sorted(extra)[0]}'")
    where = str(data.get("source", where))
    pins = {}
    for field in ("fallback", "kernels"):  # (a kernel's own plan over its fallback)
        kernels = data.get(field, {})
        if not isinstance(kernels, dict):
            raise PlanFileError(f"{where}: expected \"{field}\" to map keys to plans")
        for key, entry in kernels.items():
            what = f"{where}: kernel {key}"
            if not isinstance(entry, dict):
                raise PlanFileError(f"{what}: expected an object")
            if extra := set(entry) - {"name", "kind", "knobs"}:
                raise PlanFileError(f"{what}: unknown field '{sorted(extra)[0]}'")
            knobs = entry.get("knobs", {})
            if not isinstance(knobs, dict) or not isinstance(entry.get("kind", ""), str):
                raise PlanFileError(f"{what}: expected \"kind\" a string and \"knobs\" an "
                                    "object")
            pins[key] = Pin(str(entry.get("name", "")), entry.get("kind", ""), knobs,
                            field == "kernels")
    return where, pins


def pins_json(pins: dict[str, Pin], where: str = "schedule") -> dict:
    """A plan file of `pins` (read_plans' inverse): required ones under "kernels", the rest
    under "fallback", and the file they came from as "source"."""
    doc: dict = {"format": FORMAT, "kernels": {}, "fallback": {}}
    if where != "schedule":
        doc["source"] = where
    for key, p in pins.items():
        doc["kernels" if p.required else "fallback"][key] = \
            {"name": p.name, "kind": p.kind, "knobs": p.knobs}
    return doc


def plans_json(module: ModuleOp) -> dict:
    """The plan file of a module at tile level or below: every planned kernel's plan."""
    kernels = {}
    for k in tile_kernels(module):
        plan, key = k.the_plan, k.structural_key
        if plan is not None and key and not key.endswith("-sum"):
            kernels[key] = {"name": k.sym_name.data, "kind": plan.kind,
                            "knobs": dict(plan.knobs)}
    return {"format": FORMAT, "kernels": kernels}


@dataclass(frozen=True)
class TilePlanPass(ModulePass):
    """Plan every tile kernel: the heuristic, or the plans pinned by `schedule` (a plan file's
    path or JSON text); `kind` picks that kind for every kernel that can take it. With
    `strict=false` the file may hold plans of kernels this module does not have."""

    name = "tile-plan"

    schedule: str | None = None
    kind: str | None = None
    strict: bool | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        where, pins = read_plans(self.schedule) if self.schedule else ("", {})
        if self.kind is not None and self.kind not in CLASSES:
            raise PlanFileError(f"{self.name}: option kind={self.kind}: expected one of "
                                f"{', '.join(CLASSES)}")
        used = set()
        for kernel in tile_kernels(op):
            key = kernel.structural_key or planner.structural_key(kernel)
            pin = pins.get(key)
            if pin is None:
                if kernel.the_plan is None and self.kind is not None:
                    kinds = [k for k, _ in planner.legal_classes(kernel)]
                    if self.kind in kinds:
                        kernel.set_plan(planner.plan_kernel(kernel, self.kind), key)
                planner.ensure_plan(kernel)
                continue
            used.add(key)
            try:
                plan = planner.plan_kernel(kernel, pin.kind or None, pin.knobs)
            except PlanError as e:
                source = where if pin.required else "the tuning store's fallback plan"
                raise PlanFileError(f"{source}: {e}") from None
            if kernel.done_steps and plan != kernel.the_plan:
                raise PlanFileError(f"{where}: kernel @{kernel.sym_name.data}: its plan is "
                                    f"already carried out ({', '.join(kernel.done_steps)})")
            kernel.set_plan(plan, key)
        if self.strict is not False and (unused := [k for k, p in pins.items()
                                                    if k not in used and p.required]):
            raise PlanFileError(f"{where}: kernel {unused[0]} ({pins[unused[0]].name or '?'}) "
                                "matches no kernel of this program")
