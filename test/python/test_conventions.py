"""Conventions checked by tests, not by review: layering, the registry, lit coverage."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from deplo.passes import pipeline
from deplo.tools.size import package_files

ROOT = Path(__file__).resolve().parents[2]


def deplo_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("deplo."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("deplo.")}
    return found


FORBIDDEN = {
    "dialects": {"analysis", "lowering", "passes", "runtime", "tools", "frontend", "tuning"},
    "analysis": {"lowering", "passes", "runtime", "tools", "frontend", "tuning"},
    "lowering": {"passes", "runtime", "tools", "frontend", "tuning"},
    "passes": {"runtime", "tools", "frontend", "tuning"},
    "runtime": {"tools", "frontend", "tuning", "passes"},
    "frontend": {"tools", "runtime", "lowering", "passes"},
}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layering(package: str) -> None:
    bad = []
    for f in (ROOT / package).rglob("*.py"):
        if package == "passes" and f.name == "pipeline.py":
            continue  # the registry names every module lazily, by string
        hit = deplo_imports(f) & FORBIDDEN[package]
        if hit:
            bad.append(f"{f.relative_to(ROOT)} imports {sorted(hit)}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(pipeline.PASSES))
def test_registry_name_matches_pass_and_has_lit_test(name: str) -> None:
    cls = pipeline.PASSES[name]()
    assert cls.name == name
    assert (ROOT / "test" / "lit" / name).is_dir(), f"no lit folder test/lit/{name}/"


@pytest.mark.parametrize("name", sorted(pipeline.DIALECTS))
def test_every_dialect_loads_and_has_roundtrip_and_invalid_tests(name: str) -> None:
    dialect = pipeline.DIALECTS[name]()
    assert dialect.name == name
    for f in ("ops.mlir", "invalid.mlir"):
        assert (ROOT / "test" / "lit" / name / f).is_file(), f"missing test/lit/{name}/{f}"


def test_named_pipelines_only_name_registered_passes() -> None:
    for name, passes in pipeline.PIPELINES.items():
        for p in passes:
            assert p in pipeline.PASSES, f"{name} names unknown pass {p}"


def test_targets_load() -> None:
    assert pipeline.TARGETS["cuda"]().name == "cuda"


def test_xdsl_universe_entry_point_offers_our_dialects() -> None:
    from xdsl.universe import Universe

    multiverse = Universe.get_multiverse()
    assert {"torch", "tir", "loop", "tile", "kernel", "cuda"} <= set(multiverse.all_dialects)
    assert "loop-fuse" in multiverse.all_passes


def test_each_level_pipeline_extends_the_previous_one() -> None:
    """Compiled.module() continues from the deepest cached level: that needs prefixes."""
    from deplo.tools.driver import LEVELS, passes_to

    specs = [passes_to(level) for level in LEVELS]
    for lower, higher in itertools.pairwise(specs):
        assert higher.startswith(lower), (lower, higher)


LIMITS = ("WARP", "MAX_BLOCK", "MAX_BLOCK_THREADS", "MAX_GRID", "SHARED_MEMORY_BYTES")


def test_hardware_limits_are_defined_once() -> None:
    """CUDA's limits live in hardware.py; everything else imports them."""
    bad = []
    for f in package_files():
        rel = f.relative_to(ROOT)
        if rel == Path("hardware.py"):
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                bad += [f"{rel}:{node.lineno} defines {n}" for n in names if n in LIMITS]
    assert not bad, "\n".join(bad)


def test_one_walk_over_tile_kernels() -> None:
    """Passes find tile kernels through analysis.nest.tile_kernels (or KernelPass), not a walk
    of their own."""
    bad = []
    for f in package_files():
        rel = f.relative_to(ROOT)
        if rel == Path("analysis/nest.py"):
            continue
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if ".walk()" in line and "isinstance" in line and "tile.KernelOp" in line:
                bad.append(f"{rel}:{i}")
    assert not bad, "\n".join(bad)


def test_size_report_runs() -> None:
    from deplo.tools.size import report

    lines = report()
    assert lines[0].startswith("package") and any(line.startswith("total") for line in lines)


def test_no_import_cycles() -> None:
    """Module-level imports between deplo modules form no cycle (a late import placed after a
    definition to dodge one counts: it is still module level)."""
    graph: dict[str, set[str]] = {}
    for f in package_files():
        rel = f.relative_to(ROOT)
        name = ".".join(("deplo", *rel.with_suffix("").parts)).removesuffix(".__init__")
        deps = set()
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deplo"):
                deps |= {(node.module, f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {(a.name, a.name) for a in node.names if a.name.startswith("deplo")}
        graph[name] = deps
    # `from pkg import sub` depends on the submodule, `from mod import name` on the module
    graph = {m: {sub if sub in graph else mod for mod, sub in deps} - {m}
             for m, deps in graph.items()}
    graph = {m: {d for d in deps if d in graph} for m, deps in graph.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            assert state.get(d) != 1, "import cycle: " + " -> ".join([*path, m, d])
            if d not in state:
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
