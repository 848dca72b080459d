"""Ops deplo has no converter for go through PyTorch's own decompositions (frontend/decompose.py)
— only when the program has one, and only those ops; what still has no converter is an error
naming the user's op, never a primitive a decomposition left behind."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo import origin
from deplo.frontend.errors import FrontendError, UnsupportedOpError


class Block(torch.nn.Module):
    """A small conv-net block: padding, upsampling, hardswish, a loss-style reduction."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        y = F.hardswish(self.bn(self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))))
        y = F.interpolate(y, scale_factor=2, mode="bilinear")
        return torch.einsum("nchw,c->nhw", y, torch.arange(4.0)), F.logsigmoid(y).mean((1, 2, 3))


def test_a_block_of_decomposed_ops_matches_pytorch() -> None:
    m = Block()
    with torch.no_grad():
        m.bn.running_mean.normal_()
        m.bn.running_var.uniform_(0.5, 2)
    c = deplo.compile(m, [torch.randn(2, 3, 6, 5)])
    ops = {op.name for op in c.module("torch").walk()}
    assert "torch.linear" not in ops and "torch.matmul" in ops  # einsum's bmm
    lines = [line for k in c.module("loop").walk() for line in origin.of_op(k)]
    assert any(" of aten.hardswish at test_decompositions.py:" in line for line in lines), lines
    assert c.check(seed=1).ok
    assert c.check(target="interp", level="loop", seed=2).ok


def test_a_decomposition_that_converts_with_prims_converts() -> None:
    """renorm's decomposition casts bf16 to float32 by prims.convert_element_type."""
    x = torch.randn(5, 4, 3, dtype=torch.bfloat16, generator=torch.Generator().manual_seed(0))
    assert deplo.compile(lambda x: torch.renorm(x, 2, 1, 0.5), [x]).check(seed=1).ok


def test_converted_ops_are_not_decomposed() -> None:
    """linear stays one op beside a decomposed one (its matmul keeps its shape)."""
    c = deplo.compile(lambda x, w: F.softplus(F.linear(x, w)), [torch.randn(3, 8), torch.randn(5, 8)])
    assert any(op.name == "torch.linear" for op in c.module("torch").walk())
    assert c.check(seed=1).ok


@pytest.mark.parametrize("fn, op", [
    (lambda x: torch.polygamma(2, x.tanh()), "aten.polygamma.default"),
    (lambda x: torch.special.zeta(x, 2.0), "aten.special_zeta.other_scalar"),
])
def test_what_stays_unsupported_names_the_users_op(fn, op) -> None:
    """...and the user's function (export records no frame inside it), not deplo's wrapper."""
    with pytest.raises(UnsupportedOpError, match=f"unsupported PyTorch op '{op}' at ") as e:
        deplo.compile(fn, [torch.randn(4, 4)])
    line = fn.__code__.co_firstlineno
    assert f"at {__file__}:{line}: (lambda x:" in str(e.value), str(e.value)


def test_a_builtin_passed_as_the_function_is_not_placed_in_deplo() -> None:
    with pytest.raises(UnsupportedOpError, match="i0.default.*no source location"):
        deplo.compile(torch.i0, [torch.randn(4)])


@pytest.mark.parametrize("fn, shape", [
    (lambda x: torch.diagonal(x, 1, 1, 2) * 2, (3, 5, 6)),
    (lambda x: x.unfold(1, 3, 2), (4, 10)),
    (lambda x: torch.einsum("bii->bi", x), (2, 5, 5)),
    (lambda x: torch.trace(x @ x), (6, 6)),  # the diagonal of an intermediate
    (lambda x: torch.as_strided(x, (3, 2, 2), (1, 4, 0), 2), (4, 5)),  # overlapping, offset
], ids=["diagonal", "unfold", "einsum", "trace", "as_strided"])
def test_strided_views_gather_the_flat_input(fn, shape) -> None:
    """as_strided (diagonal's, unfold's, a repeated einsum index's decomposition): the flat
    tensor read at offset + sum(i * stride), computed from the loop variables."""
    c = deplo.compile(fn, [torch.randn(*shape)])
    assert c.check(seed=1).ok
    assert c.check(target="interp", level="loop", seed=2).ok


@pytest.mark.parametrize("fn, match", [
    (lambda x: torch.diagonal(x.t()), r"op .aten.diagonal.default. .*as_strided of a non-contiguous"),
    (lambda x: x[:2].as_strided((3,), (6,)), r"as_strided past its input's 12 elements"),
], ids=["transposed", "past-the-view"])
def test_as_strided_of_a_views_storage_is_refused(fn, match) -> None:
    """The strides of a transposed tensor, and elements past a slice, refer to its base's
    storage, which deplo's value of the view does not have: an error, not a wrong answer."""
    with pytest.raises(FrontendError, match=match):
        deplo.compile(fn, [torch.randn(4, 6)])


def test_the_error_names_the_line_of_a_modules_code() -> None:
    """The innermost frame outside torch and deplo: the module's line, not torch's F.pad."""
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.polygamma(1, x)

    with pytest.raises(UnsupportedOpError, match=r"test_decompositions.py:\d+: return torch"):
        deplo.compile(M(), [torch.randn(3)])


def test_an_input_updated_in_place_is_refused() -> None:
    """An in-place update of an input is a side effect the program cannot have (it came back as
    an extra output)."""
    def fn(x, y):
        y.mul_(2)
        return x + y

    with pytest.raises(FrontendError, match=r"updates its input 1 \('y'\) in place"):
        deplo.compile(fn, [torch.randn(3), torch.randn(3)])


INF, NAN = float("inf"), float("nan")
A = [1e8, 5.0, -0.0, 0.3, -7.5, 7.5, -7.5, 3.0, INF, -5.0, 2.0, 0.0, 300.0]
B = [3.0, INF, 1.0, 0.1, 2.0, -2.0, -2.0, 0.0, 2.0, INF, -0.0, 0.0, 4.0]


@pytest.mark.parametrize("fn", [torch.remainder, torch.fmod, torch.floor_divide, torch.hypot,
                                torch.copysign],
                         ids=["remainder", "fmod", "floor_divide", "hypot", "copysign"])
@pytest.mark.parametrize("target, level", [("cpu", None), ("interp", "loop"), ("interp", "torch")])
def test_edge_values_as_pytorch(fn, target, level) -> None:
    """C's fmod and hypot, not the textbook formulas: 1e8 % 3 is 1 (a - floor(a / b) b gave 0),
    5 % inf is 5 (0 * inf was NaN), -0 keeps its sign, hypot(3e20, 3e20) does not overflow;
    copysign takes the sign of -0."""
    a, b = torch.tensor(A), torch.tensor(B)
    if fn is torch.hypot:
        a = torch.cat([a, torch.tensor([3e20, INF, NAN])])
        b = torch.cat([b, torch.tensor([3e20, NAN, INF])])
    (got,) = deplo.compile(fn, [a, b]).run([a.numpy(), b.numpy()], target=target, level=level)
    ref = fn(a, b).numpy()
    np.testing.assert_allclose(got, ref, rtol=2e-7)
    zeros = ref == 0
    assert (np.signbit(got[zeros]) == np.signbit(ref[zeros])).all()


@pytest.mark.parametrize("fn", [
    lambda x: torch.any(x, 1), lambda x: torch.all(x, 1),
], ids=["any", "all"])
def test_any_all_over_an_empty_dim(fn) -> None:
    x = torch.zeros(2, 0)
    (got,) = deplo.compile(fn, [x]).run([x.numpy()])
    np.testing.assert_array_equal(got, fn(x).numpy())


@pytest.mark.parametrize("fn", [torch.log2, torch.exp2, torch.expm1, torch.sign, torch.floor])
def test_unary_ops_of_integer_tensors(fn) -> None:
    """Float-valued ops of an int tensor compute on its float conversion, as torch promotes it;
    sign and the roundings keep integers."""
    x = torch.tensor([1, -4, 0, 9])
    (got,) = deplo.compile(fn, [x]).run([x.numpy()])
    np.testing.assert_allclose(got, fn(x).numpy(), rtol=1e-6)
    assert got.dtype == fn(x).numpy().dtype


def test_a_tensor_passed_twice_is_two_inputs() -> None:
    """export aliases one tensor given twice (one argument read for both): the check, on fresh
    inputs, then compared x + x against x + y."""
    x = torch.randn(40, dtype=torch.float16)
    c = deplo.compile(torch.add, [x, x])
    assert len(c.program.input_names) == 2 and c.check(seed=1).ok


def test_compiling_a_module_in_training_mode_leaves_it_so() -> None:
    """deplo compiles inference semantics (dropout off), without switching the user's module."""
    m = torch.nn.Sequential(torch.nn.Linear(5, 5), torch.nn.Dropout(0.5))
    c = deplo.compile(m, [torch.randn(3, 5)])
    assert m.training and m[1].training
    assert c.check(seed=1).ok
    c = deplo.compile(lambda x: m(x) * 2, [torch.randn(3, 5)])  # a lambda's module: the same
    assert c.check(seed=1).ok and m.training and len(c.program.params) == 2
    c = deplo.compile(m.forward, [torch.randn(3, 5)])  # and a module's method's
    assert c.check(seed=1).ok and m.training and len(c.program.params) == 2


def test_a_forward_that_updates_a_buffer_leaves_it_as_it_was() -> None:
    """A call counter: compiling folded its add_ onto the module's own buffer, and every eager
    reference run moved it again (each check against another program). Compiled and checked,
    the buffer is where the user left it, and the program reads it there."""
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.full((), 2.0))

        def forward(self, x):
            self.n += 1
            return x * self.n

    m = Counter()
    c = deplo.compile(m, [torch.randn(3)])
    assert [c.check(seed=s).ok for s in range(3)] == [True] * 3
    assert m.n.item() == 2.0
    x = np.full(3, 2.0, np.float32)
    np.testing.assert_array_equal(c.run([x, *c.program.params], target="interp")[0], x * 3)


def test_numbers_among_the_example_inputs_are_bound() -> None:
    """deplo.compile(fn, [x, 2.0]) was an AttributeError ('float' has no dtype): the numbers
    are the program's constants, the tensors its inputs; a module keeps its weights and mode."""
    c = deplo.compile(lambda a, s: a * s, [torch.randn(3), 2.5])
    assert len(c.program.example_inputs) == 1 and c.check(seed=1).ok
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))

        def forward(self, x, k, scale):
            return self.mlp(x)[:, :k] * scale

    m = Head()
    c = deplo.compile(m, [torch.randn(2, 4), 3, 0.5])
    assert len(c.program.params) == 2 and c.check(seed=1).ok and m.training


def test_run_takes_torch_tensors_bf16_too() -> None:
    """run([x]) with a bf16 torch tensor was 'unsupported ScalarType BFloat16' in numpy."""
    x = torch.randn(3, 130, dtype=torch.bfloat16)
    c = deplo.compile(lambda x: x.sum(-1), [x])
    for target in ("cpu", "interp"):
        np.testing.assert_allclose(c.run([x], target=target)[0], x.sum(-1).float().numpy(),
                                   rtol=1e-2)


def test_several_ops_without_a_converter_are_all_named() -> None:
    """celu decomposes, i1 does not: the message leads with celu (the first op without a
    converter), so it also lists every op that had none."""
    from deplo.frontend.errors import FrontendError

    with pytest.raises(FrontendError, match=r"bessel_i1.*\(no converter of their own: "
                                            r"aten\.celu\.default, aten\.special_i1"):
        deplo.compile(lambda x: F.celu(x, 0.5) + torch.special.i1(x), [torch.randn(3, 13)])


@pytest.mark.parametrize("fn, op", [
    (lambda x: x + torch.randn(3, 5), "aten.randn.default"),  # no input: once folded, one draw
    (lambda x: x * torch.rand_like(x), "aten.rand_like.default"),
    (lambda x: torch.bernoulli(x.sigmoid()), "aten.bernoulli.default"),  # (decomposes to rand)
    (lambda x: torch.multinomial(x.sigmoid(), 2), "aten.multinomial.default"),
    (lambda x: x + torch.randn(3, 5, generator=torch.Generator().manual_seed(0)),
     "aten.randn.generator"),  # (the generator: a custom object among export's inputs)
])
def test_random_ops_are_refused_not_frozen(fn, op) -> None:
    """A random op's value differs per call: compiled, it would be one draw made at import."""
    with pytest.raises(UnsupportedOpError, match=rf"'{op}' \(a random op; .*as an input\)"):
        deplo.compile(fn, [torch.randn(3, 5)])


@pytest.mark.parametrize("fn", [lambda x: F.dropout2d(x, 0.5, training=False),
                                lambda x: F.alpha_dropout(x, 0.5, training=False),
                                lambda x: F.feature_alpha_dropout(x, 0.3, False)])
def test_random_ops_that_draw_nothing_in_eval_mode_still_decompose(fn) -> None:
    """Their ops carry PyTorch's random tag; outside training their decompositions draw nothing."""
    x = torch.randn(2, 3, 4, 5)
    out = deplo.compile(fn, [x]).run([x], target="interp", level="loop")[0]
    np.testing.assert_array_equal(out, x.numpy())


@pytest.mark.parametrize("kw", [{"mode": "bilinear"}, {"mode": "bilinear", "align_corners": True},
                                {"mode": "bicubic"}, {"mode": "bicubic", "antialias": True},
                                {"mode": "bilinear", "antialias": True, "size": (5, 13)}])
def test_uint8_resizes_round_as_pytorchs_kernel(kw) -> None:
    """uint8 bilinear/bicubic is Pillow's fixed-point separable resampling in PyTorch, not the
    float32 decomposition rounded once (off by 1, bicubic by far more)."""
    kw = {"scale_factor": 1.5, **kw} if "size" not in kw else kw
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (2, 3, 8, 9), dtype=torch.uint8, generator=g)
    got = deplo.compile(lambda x: F.interpolate(x, **kw), [x])(x)
    assert got.dtype == torch.uint8 and torch.equal(got, F.interpolate(x, **kw))


def test_uint8_resize_decompositions_equal_the_kernel() -> None:
    from deplo.frontend.resample import decompositions

    g = torch.Generator().manual_seed(0)
    for op, fn in decompositions().items():
        for shape, size, scales in [((1, 2, 8, 8), None, [1.5, 2.25]), ((2, 1, 7, 9), [3, 4], None),
                                    ((1, 3, 1, 5), [3, 1], None), ((1, 1, 30, 20), None, [0.3, 0.7])]:
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
            for corners in (False, True):
                assert torch.equal(fn(x, size, corners, scales), op(x, size, corners, scales)), \
                    (op, shape, size, scales, corners)
