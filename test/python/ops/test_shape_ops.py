"""Views, data movement, creation and attention against PyTorch at the torch, tensor and loop
levels (the numpy interpreters), on fresh random inputs.

Each case is a small torch callable (fp32, shapes that are not powers of two) and the torch ops
it must import as, so a case cannot pass by never reaching the op it tests. Integer inputs are
indices: `random_inputs` draws them from [0, max(example) + 1), so each example holds the
largest valid index. Creation ops (arange, full, ...) depend on nothing but shapes, which the
importer folds into constants; their cases compile with folding turned off.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.frontend.fold import StaticEvaluator

LEVELS = ("torch", "tensor", "loop")

_gen = torch.Generator().manual_seed(0)


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_gen)


def ids(high: int, *shape: int) -> torch.Tensor:
    """Example indices in [0, high) that include high - 1 (random inputs use the same range)."""
    t = torch.randint(0, high, shape, generator=_gen)
    t.view(-1)[0] = high - 1
    return t


@dataclass
class Case:
    fn: Callable
    examples: list[torch.Tensor]
    ops: tuple[str, ...]  # torch ops the program must contain
    fold: bool = True  # False: compile with import-time folding off (creation ops)


X = randn(3, 5, 6)
Q, K, V = randn(2, 4, 7, 16), randn(2, 2, 7, 16), randn(2, 2, 7, 16)
Q1, K1, V1 = randn(1, 3, 7, 16), randn(1, 3, 7, 16), randn(1, 3, 7, 16)

CASES: dict[str, Case] = {
    # views
    "view_merge": Case(lambda x: x.view(15, 6) * 2.0, [X], ("reshape",)),
    "view_split": Case(lambda x: x.view(3, 5, 2, 3) + 1.0, [X], ("reshape",)),
    "reshape_after_transpose": Case(
        lambda x: x.transpose(1, 2).reshape(3, 30) * 2.0, [X], ("transpose", "reshape")
    ),
    "unsafe_view_mixed": Case(lambda x: x.reshape(10, 9) - 1.0, [X], ("reshape",)),
    "permute": Case(lambda x: x.permute(2, 0, 1) * 3.0, [X], ("permute",)),
    "transpose_negative": Case(lambda x: x.transpose(-1, 0) + 1.0, [X], ("transpose",)),
    "t": Case(lambda x: x.t() * 2.0, [randn(5, 6)], ("transpose",)),
    "expand": Case(lambda x: x[:, :1].expand(2, 3, 5, 6) + 0.5, [X], ("expand",)),
    "unsqueeze": Case(lambda x: x.unsqueeze(1) * 2.0, [X], ("unsqueeze",)),
    "squeeze_all": Case(lambda x: x.squeeze() * 2.0, [randn(3, 1, 5, 1)], ("squeeze",)),
    "squeeze_dim": Case(lambda x: x.squeeze(-1) * 2.0, [randn(3, 5, 1)], ("squeeze",)),
    "slice": Case(lambda x: x[:, 1:-1, ::2] * 2.0, [X], ("slice",)),
    "slice_clamped": Case(lambda x: x[..., 2:100] + x[..., -100:4], [X], ("slice",)),
    "slice_negative_start": Case(lambda x: x[-2:] * 2.0, [X], ("slice",)),
    "select_negative": Case(lambda x: x[:, -1] + x[1, 1:4], [X], ("select",)),
    # data movement
    "cat_last": Case(lambda a, b: torch.cat([a, b, a], -1) * 2.0, [X, randn(3, 5, 7)], ("cat",)),
    "cat_first": Case(lambda a, b: torch.cat([a, b]) + 1.0, [X, randn(2, 5, 6)], ("cat",)),
    "embedding": Case(lambda w, i: F.embedding(i, w) * 2.0, [randn(11, 6), ids(11, 2, 3)],
                      ("embedding",)),
    "index_rotary": Case(
        lambda cos, pos: cos[pos] * 2.0, [randn(13, 6), ids(13, 2, 7)], ("index",)
    ),
    "index_inner_dim": Case(lambda x, i: x[:, i] + 1.0, [X, ids(5, 2, 3)], ("index",)),
    "index_two_apart": Case(
        lambda x, i, j: x[i, :, j] + 1.0, [X, ids(3, 2, 1), ids(6, 3)], ("index",)
    ),
    "index_two_adjacent": Case(
        lambda x, i, j: x[:, i, j] + 1.0, [X, ids(5, 4), ids(6, 4)], ("index",)
    ),
    # composites of views and data movement
    "view_reshape_expand_as": Case(
        lambda x, y, z: x.view_as(y) + x.reshape_as(y) + z.expand_as(x.view_as(y)),
        [randn(3, 10), randn(6, 5), randn(1, 5)], ("reshape", "expand")),
    "flatten_unflatten": Case(lambda x: x.flatten(1).unflatten(1, (2, 15)) * 2.0, [X],
                              ("reshape",)),
    "movedim": Case(lambda x: torch.movedim(x, (0, -1), (-1, 1)) + 1.0, [X], ("permute",)),
    "stack": Case(lambda a, b: torch.stack([a, b, a], -2) * 2.0, [X, randn(3, 5, 6)], ("cat",)),
    "split_chunk_unbind": Case(
        lambda x: torch.cat(x.split(2, -1)[::-1], -1) + torch.cat(x.chunk(3, 1)[::-1], 1)
        + x.unbind(0)[1], [randn(3, 6, 6)], ("slice", "select")),
    "split_sizes_narrow": Case(
        lambda x: x.split([1, 4], 1)[1] + x.narrow(-2, -4, 4), [X], ("slice",)),
    "gather": Case(lambda x, i: torch.gather(x, 1, i) * 2.0, [X, ids(5, 3, 4, 6)], ("gather",)),
    "gather_last": Case(lambda x, i: torch.gather(x, -1, i), [randn(40, 33), ids(33, 40, 50)],
                        ("gather",)),
    "index_select": Case(lambda x, i: torch.index_select(x, -1, i) + 1.0, [X, ids(6, 9)],
                         ("index",)),
    "type_as": Case(lambda x, y: x.type_as(y) * 2, [X, randn(2).half()], ("to",)),
    "int_arithmetic": Case(lambda x, i: x[(i * 2 - 1).clamp(0, 4).abs()] + torch.cumsum(i, 0)[0],
                           [randn(5, 6), ids(3, 7)], ("index", "cumsum")),
    # no-op views and copies
    "no_op_copies": Case(
        lambda x: x.contiguous().clone().detach().to("cpu") * 2.0, [X], ("mul",)
    ),
    # creation (folding off, so the ops reach the compiler)
    "arange": Case(lambda x: x + torch.arange(6, dtype=torch.float32), [X], ("arange",),
                   fold=False),
    "arange_start_step": Case(
        lambda x: x + torch.arange(1.5, 4.5, 0.5), [X], ("arange",), fold=False
    ),
    "arange_int_as_index": Case(
        lambda w: w[torch.arange(2, 7)] * 2.0, [randn(9, 4)], ("arange", "index"), fold=False
    ),
    "full_family": Case(
        lambda x: x + torch.full((5, 6), 2.5) + torch.ones(6) + torch.zeros(3, 5, 6)
        + x.new_ones(5, 6) + x.new_zeros(6) + torch.full_like(x, 3.0) + torch.ones_like(x)
        + torch.zeros_like(x),
        [X], ("full",), fold=False,
    ),
    # attention
    "sdpa": Case(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [Q1, K1, V1],
                 ("sdpa",)),
    "sdpa_causal": Case(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [Q1, K1, V1],
        ("sdpa",),
    ),
    "sdpa_gqa": Case(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), [Q, K, V],
        ("sdpa",),
    ),
    "sdpa_gqa_causal_scale": Case(
        lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=0.3, enable_gqa=True
        ),
        [Q, K, V], ("sdpa",),
    ),
    "sdpa_float_mask": Case(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [Q1, K1, V1, randn(7, 7)], ("sdpa",),
    ),
    "sdpa_bool_mask": Case(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > -1.0),
        [Q1, K1, V1, randn(1, 7, 7)], ("sdpa",),
    ),
}


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for name, case in CASES.items():
        with pytest.MonkeyPatch.context() as mp:
            if not case.fold:
                mp.setattr(StaticEvaluator, "try_fold", lambda self, node: False)
            out[name] = deplo.compile(case.fn, case.examples)
    return out


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch(compiled, name: str, level: str) -> None:
    result = compiled[name].check(target="interp", level=level, seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("name", CASES)
def test_imports_as_the_op_under_test(compiled, name: str) -> None:
    names = {op.name for op in compiled[name].module("torch").walk()}
    for op in CASES[name].ops:
        assert f"torch.{op}" in names, f"{name}: no torch.{op} in\n{compiled[name].text('torch')}"


def test_no_op_copies_leave_no_op(compiled) -> None:
    names = [op.name for op in compiled["no_op_copies"].module("torch").walk()]
    assert [n for n in names if n.startswith("torch.")] == ["torch.constant", "torch.mul"]


def test_sdpa_is_one_torch_op(compiled) -> None:
    names = [op.name for op in compiled["sdpa_gqa_causal_scale"].module("torch").walk()]
    assert [n for n in names if n.startswith("torch.")] == ["torch.sdpa"]


def test_gather_and_views_fuse_into_their_consumer(compiled) -> None:
    for name in ("embedding", "index_rotary", "reshape_after_transpose", "slice", "expand"):
        kernels = [op for op in compiled[name].module("loop").ops if op.name == "loop.kernel"]
        assert len(kernels) == 1, f"{name}: {len(kernels)} kernels"


def test_concat_is_inlined_as_a_select(compiled) -> None:
    """A concat read at a plain index along its dim is inlined into its consumer as a select
    between its parts (loop-fuse, `inline-concat`): one kernel, no concat buffer."""
    module = compiled["cat_last"].module("loop")
    kernels = [op for op in module.ops if op.name == "loop.kernel"]
    assert len(kernels) == 1
    assert sum(op.name == "arith.select" for op in kernels[0].walk()) == 2


def test_integer_inputs_are_valid_indices(compiled) -> None:
    from deplo.tools.api import random_inputs

    c = compiled["embedding"]
    a, b = random_inputs(c.program, seed=3), random_inputs(c.program, seed=4)
    assert a[1].dtype == b[1].dtype == c.program.example_inputs[1].dtype
    assert 0 <= a[1].min() and a[1].max() < 11
    assert not (a[1] == b[1]).all()


@pytest.mark.parametrize("level", LEVELS)
def test_out_of_range_index_is_an_error(compiled, level: str) -> None:
    """Index values outside the table are caught by every interpreter, not read as garbage (and
    by the host before a run, when the index is an input: test_api.py)."""
    from xdsl.utils.exceptions import InterpretationError

    from deplo.tools.api import random_inputs

    c = compiled["embedding"]
    inputs = random_inputs(c.program, seed=5)
    inputs[1][0, 0] = 11
    with pytest.raises(InterpretationError, match="outside"):
        c.executable("interp", level).run(inputs)
    with pytest.raises(IndexError, match="index 11 in input 1"):
        c.run(inputs, target="interp", level=level)


@pytest.mark.parametrize("fn,shape,index,n", [
    (lambda x, i: x[i], (5,), (3,), 5),
    (lambda x, i: x[:, i], (4, 6), (2, 3), 6),
    (lambda x, i: x[i, 1:], (7, 4), (5,), 7),
], ids=["1-d", "columns", "rows-then-slice"])
def test_negative_index_values_count_from_the_end(fn, shape, index, n) -> None:
    """aten.index wraps negative index values (x[-1] is the last row) at run time; they had been
    read out of bounds (NaN on the CPU runtime, an illegal read on a GPU)."""
    x = torch.randn(*shape)
    i = torch.randint(-n, n, index)
    i.view(-1)[0] = -1
    c = deplo.compile(fn, [x, i])
    want = fn(x, i).numpy()
    assert (c.run([x.numpy(), i.numpy()], target="cpu")[0] == want).all()
    assert (c.run([x.numpy(), i.numpy()], target="interp", level="tensor")[0] == want).all()


@pytest.mark.parametrize("fn,inputs", [
    (lambda a, b: torch.cat([a, b], 0), [torch.randn(2, 3, dtype=torch.float16), torch.randn(2, 3)]),
    (lambda a, b: torch.cat([a, b], 1), [torch.randint(0, 5, (2, 3)), torch.randn(2, 3)]),
    (lambda a, b: (a > 0) + (b > 0), [torch.randn(3, 5), torch.randn(3, 5)]),
    (lambda a, b: (a > 0) * (b > 0), [torch.randn(3, 5), torch.randn(3, 5)]),
], ids=["cat-f16-f32", "cat-int-float", "bool-add-is-or", "bool-mul-is-and"])
def test_promotions_of_mixed_and_bool_operands(fn, inputs) -> None:
    """torch.cat of mixed dtypes takes the promoted dtype (it was a verifier error), and bool +
    bool is logical or, bool * bool logical and (an internal error on add of i1)."""
    c = deplo.compile(fn, inputs)
    assert c.check(seed=2).ok


def test_value_dependent_shapes_are_refused_naming_why() -> None:
    """A boolean mask's selection has a shape only the values tell: refused in one line naming
    the op and the reason (it was a verifier message about a symbol `u0`)."""
    from deplo.frontend.errors import FrontendError

    x = torch.randn(4)
    with pytest.raises(FrontendError, match="shape depends on the values"):
        deplo.compile(lambda x: x[x > 0], [x])
