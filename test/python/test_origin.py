"""origin.py: a kernel's torch ops summarized by module in source-line order; whatever text the
IR holds, the .cu's comment stays a comment; weights named like `in_proj_weight` count."""

from __future__ import annotations

import re

from test_cli import run

from deplo import origin
from deplo.lowering.emit_cuda import weights_read


def test_summary_groups_by_module_in_source_order() -> None:
    lines = ["add: aten.add.Tensor in ln at m.py:66", "mean: aten.mean.dim in ln at m.py:65",
             "linear: aten.linear in q at m.py:244", "pow: aten.pow.Tensor_Scalar in ln at m.py:65",
             "cat: aten.cat at the expression"]
    assert origin.summary(lines) == ["ln: mean, pow, add (m.py:65-66)", "q: linear (m.py:244)",
                                     "cat (the expression)"]


def test_any_origin_text_stays_inside_the_comment() -> None:
    tir = run("deplo", "compile", "-c", "torch.softmax(torch.randn(4,64),-1)", "--ir", "tensor",
              "--debug-info").stdout
    for evil in ("ends with a splice\\\\", "two\\nlines", "tab\\there"):
        text = re.sub(r'deplo.origin = "[^"]*"', lambda _, e=evil: f'deplo.origin = "{e}"', tir)
        cu = run("deplo-opt", "-p", "to-cuda", "-t", "cuda", stdin=text)
        assert cu.returncode == 0, cu.stderr
        lines = cu.stdout.splitlines()
        i = next(k for k, line in enumerate(lines) if line.endswith(" implements:"))
        assert lines[i + 1].startswith("//   ") and not lines[i + 1].endswith("\\"), lines[i + 1]
        assert lines[i + 2].startswith(('extern "C"', "// ")), lines[i + 2]


class _Arg:
    def __init__(self, name: str) -> None:
        self.name_hint = name


def test_weights_read_takes_parameter_like_names() -> None:
    names = ["x", "self_attn.q_proj.weight", "mha.in_proj_weight", "mha.in_proj_bias",
             "ln.bias", "mul"]
    assert weights_read([_Arg(n) for n in names]) == ["self_attn.q_proj", "mha", "ln"]
