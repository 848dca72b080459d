"""Differential comparison against PyTorch with dtype-aware tolerances.

fp32 is held to 1e-5 relative to the largest reference magnitude (reductions reorder sums, so an
elementwise rtol would punish cancellation), fp16/bf16 to 1e-2; past it, a float output passes
when it is no less accurate than eager against float64 (`check_program`: an ill-conditioned
program, such as a division by a column sum near zero, amplifies any summation order's
rounding); integer and bool outputs must be exact.
NaN and inf must appear exactly where the reference has them, and each output must have the
reference's dtype (values alone would pass a float64 result of a float32 program).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12,
             np.dtype(np.float16): 1e-2, np.dtype(np.uint16): 1e-2}


@dataclass
class Comparison:
    max_abs: float
    max_rel: float
    tolerance: float
    ok: bool
    note: str = ""

    def line(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        tol = f"tol {self.tolerance:.0e}" if self.tolerance else "exact"  # (integers)
        return (f"max abs err {self.max_abs:.3e}  max rel err {self.max_rel:.3e}  "
                f"({tol}){self.note}  {verdict}")


# by MLIR element type: the program's declared output type decides, because bf16 results travel
# through numpy as float32 and would otherwise be held to fp32's tolerance
TOLERANCE_BY_TYPE = {"f32": 1e-5, "f64": 1e-12, "f16": 1e-2, "bf16": 1e-2}


def compare(outputs: Sequence[np.ndarray], reference: Sequence[np.ndarray],
            element_types: Sequence[str] | None = None, same_dtype: bool = True) -> Comparison:
    """Max abs / rel error against the reference; `element_types` (e.g. ["bf16"]) sets each
    output's tolerance, else its numpy dtype does; `same_dtype`: a dtype other than the
    reference's fails (not against a float64 second opinion)."""
    if len(outputs) != len(reference):
        return Comparison(float("inf"), float("inf"), 0.0, False)
    max_abs = max_rel = 0.0
    tol = 0.0
    ok = True
    for k, (out, ref) in enumerate(zip(outputs, reference)):
        ref = np.asarray(ref)
        this_tol = TOLERANCE.get(ref.dtype, 1e-5)
        if element_types is not None and k < len(element_types):
            this_tol = TOLERANCE_BY_TYPE.get(element_types[k], this_tol)
        if ref.dtype.kind in "iub":  # indices, masks: exact
            this_tol = 0.0
        tol = max(tol, this_tol)
        if np.shape(out) != ref.shape:
            return Comparison(float("inf"), float("inf"), tol, False)
        if same_dtype and np.asarray(out).dtype != ref.dtype:  # (bf16: float32 on both sides)
            return Comparison(float("inf"), float("inf"), tol, False,
                              f"; output {k} is {np.asarray(out).dtype}, PyTorch's {ref.dtype}")
        o = np.asarray(out, dtype=np.float64)
        r = ref.astype(np.float64)
        special = ~np.isfinite(r)  # NaN / inf where PyTorch has them (a mean over nothing)
        same = np.array_equal(o[special], r[special], equal_nan=True)
        o, r = np.where(special, 0.0, o), np.where(special, 0.0, r)
        err = float(np.max(np.abs(o - r), initial=0.0))
        if not (same and np.all(np.isfinite(o))):
            err = float("inf")
        scale = max(float(np.max(np.abs(r), initial=0.0)), np.finfo(np.float32).tiny)
        rel = err / scale
        max_abs, max_rel = max(max_abs, err), max(max_rel, rel)
        ok = ok and rel <= this_tol
    return Comparison(max_abs, max_rel, tol, bool(ok))


def check_program(outputs: Sequence[np.ndarray], program, inputs: Sequence[np.ndarray],
                  element_types: Sequence[str] | None = None,
                  reference: Sequence[np.ndarray] | None = None) -> Comparison:
    """`outputs` of `program` on `inputs` against PyTorch eager (`reference`, computed if not
    given). Where a float output misses the tolerance, a second opinion: the program in
    float64. Eager rounds every f16/bf16 intermediate and deplo accumulates in float32, so both
    can be as close to the exact result while they differ from each other by more than the
    tolerance (bf16 attention: 4-5 ulps apart, each about as far from float64); in fp32 a
    different summation order does the same where the program amplifies rounding (x divided by
    a column sum near zero). Each output is judged alone, integer ones exactly: a f16/bf16 one
    passes when its error against float64 is at most 1.25x eager's own; an fp32 one when each
    element is within 1e-5 (of the largest), 1.25x eager's error there, or 4x the most a few
    draws of eager's rounding move it (`_eager_spread`), so an ill-conditioned element cannot
    excuse a wrong well-conditioned one — or when the whole output is within 1e-4 and 2x
    eager's worst element of float64 — or, element by element, within 1e-5 or 1.25x eager's
    error of the float64 program whose every op's result is rounded to fp32. That one is the
    exact result of the fp32 program: float64 alone also counts the rounding an fp32 op's input
    had before the op (`layer_norm(x + 1e4)`: x + 1e4 in fp32 moves the output by 5e-4 however
    exactly layer_norm is then computed), which the fp32 program cannot avoid, so it would fail
    a kernel that is exact on what it reads while eager, sloppier, is no yardstick there."""
    if reference is None:
        reference = program.reference(inputs)
    result = compare(outputs, reference, element_types)
    types = [{"float32": "f32", "float16": "f16"}.get(t, t) for t in
             element_types or [np.asarray(r).dtype.name for r in reference]]
    wrong_dtype = any(np.asarray(o).dtype != np.asarray(r).dtype
                      for o, r in zip(outputs, reference))
    if result.ok or wrong_dtype or not any(t in HALF + FP32 for t in types):
        return result
    try:
        exact = program.reference(inputs, float64=True)
    except RuntimeError as e:  # a tensor it closes over stays float32 (a lambda's global module)
        first = str(e).splitlines()[0]
        return dataclasses.replace(result, note=f"; no float64 second opinion ({first})")
    spread = rounded = None
    notes, fine = [], True
    for k, (out, ref, ex) in enumerate(zip(outputs, reference, exact)):
        t = types[k] if k < len(types) else ""
        kind = [t] if t in TOLERANCE_BY_TYPE else None
        one = compare([out], [ref], kind)
        if one.ok:
            continue
        if t not in HALF + FP32 or np.asarray(ref).dtype.kind in "iub":
            return result  # integers exact; a float output beside them has no say
        ours, eager = compare([out], [ex], kind, False), compare([ref], [ex], kind, False)
        notes.append(f"against float64 {ours.max_rel:.3e}, eager's own {eager.max_rel:.3e}")
        if not math.isfinite(eager.max_rel):  # eager overflowed (or NaN) where float64 did
            # not: ours passes only within the tolerance of float64 (an fp16 mse_loss of
            # 300 - 0: PyTorch's decomposition squares in float32, eager rounds 90000 to inf)
            fine = fine and math.isfinite(ours.max_rel) and ours.max_rel <= ours.tolerance
        elif t in HALF:
            fine = fine and ours.max_rel <= max(ours.tolerance, 1.25 * eager.max_rel)
        else:  # fp32: element by element, within eager's rounding over a few draws
            spread = _eager_spread(program, inputs) if spread is None else spread
            o, r, e = (np.asarray(a, dtype=np.float64) for a in (out, ref, ex))
            scale = max(float(np.max(np.abs(e), initial=0.0)), np.finfo(np.float32).tiny)
            allowed = np.maximum(np.maximum(TOLERANCE_BY_TYPE["f32"] * scale, 1.25 * np.abs(r - e)),
                                 4 * spread[k])
            within = bool(np.all(np.abs(o - e) <= allowed))
            if not within:  # float64 may differ by how fp32 rounds what an op reads (x + 1e4)
                if rounded is None:
                    rounded = program.reference(inputs, float64=True, rounded=True)
                d = np.asarray(rounded[k], dtype=np.float64)
                within = bool(np.all(np.abs(o - d) <= np.maximum(
                    TOLERANCE_BY_TYPE["f32"] * scale, 1.25 * np.abs(r - d))))
                notes[-1] += f", each op's result rounded to fp32 {_rel(o, d):.3e}"
            # or as a whole: within 10x the tolerance and 2x eager's worst element. An op that
            # absorbs the draws' one-ulp moves (x + 1000) hides how eager's rounding varies:
            # layer_norm(x + 1000)'s rows are off by their mean's rounding, ours most in one
            # row, eager's in another (1.4x apart at worst over seeds); a wrong kernel misses
            # by orders of magnitude. (Not "as far as eager" at any size: eager's ill-conditioned
            # elements would excuse a wrong well-conditioned one.)
            worst = max(eager.max_rel, float(np.max(spread[k], initial=0.0)) / scale)
            fine = fine and (within or ours.max_rel <= min(2 * worst, 10 * ours.tolerance))
    return dataclasses.replace(result, ok=bool(fine), note="; " + "; ".join(notes))


HALF, FP32 = ("f16", "bf16"), ("f32",)


def _rel(o: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(o - ref), initial=0.0)) / max(
        float(np.max(np.abs(ref), initial=0.0)), np.finfo(np.float32).tiny)


def _eager_spread(program, inputs: Sequence[np.ndarray], draws: int = 4) -> list[np.ndarray]:
    """Per output, element by element, the worst error against float64 of eager fp32 over a few
    draws of its rounding: the inputs moved by one fp32 ulp at random (each draw rounds
    differently), each against its own float64 result. A single draw (eager's own error) is too
    noisy to hold another summation order to: x over a column sum near zero, where ours and
    eager's errors differ 1-4x either way from seed to seed and are the same on average; a
    wrong kernel misses by orders of magnitude, and on the elements rounding does not move."""
    rng = np.random.default_rng(0)
    worst: list[np.ndarray] | None = None
    for _ in range(draws):
        moved = [np.nextafter(a, a + rng.choice([-1.0, 1.0], size=np.shape(a)).astype(a.dtype))
                 if np.asarray(a).dtype == np.float32 else a for a in inputs]
        errs = [np.abs(np.asarray(r, np.float64) - np.asarray(e, np.float64))
                for r, e in zip(program.reference(moved), program.reference(moved, float64=True))]
        worst = errs if worst is None else [np.maximum(w, x) for w, x in zip(worst, errs)]
    return worst or []
