"""Shared helpers of the CPU-runtime tests: the op case tables of test/python/ops and the tiny
models of test/python/models, loaded by path (pytest runs with --import-mode=importlib, so test
modules are not importable by name), and a differential check under several fiber schedules."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from deplo.runtime.check import Comparison, compare
from deplo.tools.api import random_inputs

TESTS = Path(__file__).resolve().parents[1]


def load_cases(relpath: str) -> ModuleType:
    """`load_cases("ops/test_math_ops.py")`: that module, loaded once under a private name."""
    name = "_cases_" + relpath.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TESTS / relpath)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def check_on_cpu(compiled, schedules: Sequence[str] = ("LR-fwd", "EG-rev"), seed: int = 1,
                 tolerance: float | None = None) -> list[Comparison]:
    """Run `compiled` (a deplo.tools.api.Compiled) on the CPU runtime under each fiber schedule,
    against PyTorch eager on the same fresh random inputs; one comparison per schedule. With
    `tolerance`, the comparison is held to it instead of the dtype's default."""
    inputs = random_inputs(compiled.program, seed)
    ref = compiled.program.reference(inputs[: len(compiled.program.example_inputs)])
    exe = compiled.executable("cpu")
    out = []
    for s in schedules:
        c = compare(exe.run(inputs, schedule=s), ref)
        if tolerance is not None:
            c.tolerance, c.ok = tolerance, c.max_rel <= tolerance
        out.append(c)
    return out
