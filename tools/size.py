"""The size report: lines of Python per package (non-blank, not comments; docstrings counted
apart), ops per dialect and registered passes. CI prints it; the aim is the whole mission in
about 12,000 code lines outside tests.

    python -m deplo.tools.size
"""

from __future__ import annotations

import ast
import io
import os
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 12_000


def count(path: Path) -> tuple[int, int]:
    """(code lines, docstring lines) of one file: lines holding a token other than a comment,
    a newline or a docstring."""
    text = path.read_text()
    doc_lines: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            doc_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    code: set[int] = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in skip:
            code.update(range(tok.start[0], tok.end[0] + 1))
    return len(code - doc_lines), len(doc_lines)


def package_files() -> list[Path]:
    """The package's own .py files: a walk that never enters test/, build/ (whose cache other
    processes may be writing) or the virtual environment."""
    out = []
    for top, dirs, files in os.walk(ROOT):
        if Path(top) == ROOT:
            dirs[:] = [d for d in dirs if d not in ("test", "build") and not d.startswith(".")
                       and not d.endswith("egg-info")]
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [Path(top) / f for f in files if f.endswith(".py")]
    return sorted(out)


def report() -> list[str]:
    from deplo.passes import pipeline

    packages: dict[str, list[int]] = {}
    for f in package_files():
        rel = f.relative_to(ROOT)
        pkg = rel.parts[0] if len(rel.parts) > 1 else "(root)"
        c, d = count(f)
        totals = packages.setdefault(pkg, [0, 0, 0])
        totals[0] += 1
        totals[1] += c
        totals[2] += d
    lines = [f"{'package':<12} {'files':>5} {'code':>7} {'docstrings':>10}"]
    for pkg, (files, code, docs) in sorted(packages.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{pkg:<12} {files:>5} {code:>7} {docs:>10}")
    total = sum(v[1] for v in packages.values())
    lines.append(f"{'total':<12} {sum(v[0] for v in packages.values()):>5} {total:>7} "
                 f"{sum(v[2] for v in packages.values()):>10}   (budget {BUDGET:,})")
    ops = {name: len(list(get().operations)) for name, get in pipeline.DIALECTS.items()}
    lines.append("ops: " + ", ".join(f"{n} {k}" for n, k in ops.items())
                 + f" (total {sum(ops.values())})")
    lines.append(f"passes: {len(pipeline.PASSES)} registered, {len(pipeline.PIPELINES)} pipelines")
    return lines


def main() -> int:
    print("\n".join(report()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
