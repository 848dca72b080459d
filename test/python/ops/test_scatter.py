"""scatter, scatter_add and index_fill / index_copy / index_add convert by matching places
against index entries (frontend/aten.py `_scattered`): against PyTorch at every level and on
the CPU runtime, repeated indices (the last write wins; sums), an index shorter than the input
off its dim, integers, bf16 (summed in f32), a dim other than the last."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import deplo
from deplo.frontend.errors import FrontendError
from deplo.runtime.cpu import cpu_runtime_available

T = torch.tensor
CASES = {
    "scatter_value": (lambda x: torch.zeros_like(x).scatter(1, T([[0, 2], [1, 1], [3, 0]]), 1.5)
                      + x, [(3, 4)]),
    "scatter_value_dim0_short_index": (lambda x: x.scatter(0, T([[0, 2, 1]]), -2.0), [(3, 4)]),
    "scatter_src_repeated": (lambda x, s: x.scatter(1, T([[0, 2, 0], [1, 1, 3]]), s),
                             [(2, 4), (2, 5)]),
    "scatter_reduce_add": (lambda x, s: x.scatter(0, T([[1, 0], [1, 1]]), s, reduce="add"),
                           [(3, 2), (2, 2)]),
    "scatter_reduce_multiply": (lambda x, s: x.scatter(1, T([[0, 2, 0], [1, 1, 3]]), s,
                                                       reduce="multiply"), [(2, 4), (2, 5)]),
    "scatter_add": (lambda x, s: x.scatter_add(0, T([[0, 1], [2, 0], [0, 0]]), s),
                    [(3, 2), (3, 2)]),
    "index_fill": (lambda x: x.index_fill(1, T([0, 3]), 7.0), [(2, 5, 3)]),
    "index_copy": (lambda x, s: x.index_copy(0, T([4, 1]), s), [(5, 3), (2, 3)]),
    "index_add_alpha": (lambda x, s: x.index_add(1, T([0, 2, 0]), s, alpha=2.0), [(2, 4), (2, 3)]),
}
TARGETS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]


def _check(fn, xs, target, level, tol) -> None:
    ref = fn(*xs)
    compiled = deplo.compile(fn, xs)
    out = compiled.run(list(xs) + list(compiled.program.params), target=target, level=level)[0]
    np.testing.assert_allclose(np.asarray(out, dtype=np.float64), ref.double().numpy(), atol=tol,
                               rtol=tol)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("target, level", TARGETS, ids=[t[1] or t[0] for t in TARGETS])
@pytest.mark.parametrize("name", CASES)
def test_scatters_match_pytorch(name: str, target: str, level: str | None) -> None:
    if target == "cpu" and not cpu_runtime_available():
        pytest.skip("no CPU runtime")
    fn, shapes = CASES[name]
    torch.manual_seed(0)
    _check(fn, [torch.randn(s) for s in shapes], target, level, 1e-6)


def test_negative_indices_and_numbers_cast_to_the_tensor() -> None:
    """index_fill counts a negative index from the end; a float into an integer tensor is
    truncated and True into a bool one is 1, as aten casts them (a short index's padding is
    never taken for a negative entry)."""
    _check(lambda x: x.index_fill(0, T([-1, 1]), 9.0), [torch.randn(4, 3)], "cpu", None, 0)
    _check(lambda x: x.index_put((T([0, -4]),), torch.ones(2, 3)), [torch.randn(4, 3)], "cpu",
           None, 0)
    for target, level in TARGETS[1:]:
        _check(lambda x: x.scatter(1, T([[0], [1]]), -2.7),
               [torch.randint(-5, 5, (3, 4), dtype=torch.int32)], target, level, 0)
    _check(lambda x: x.masked_fill(x > 0, 2.5), [torch.randint(-5, 5, (3, 4))], "cpu", None, 0)
    _check(lambda x: (x > 0).scatter(1, T([[0], [1]]), True), [torch.randn(3, 4)], "cpu", None, 0)


def test_integer_and_bf16_scatters() -> None:
    _check(lambda x: x.scatter_add(0, T([0, 0, 2]), T([5, 6, 7])), [torch.randint(0, 9, (4,))],
           "interp", "loop", 0)
    _check(lambda x, s: x.index_add(0, T([1, 1, 0]), s),
           [torch.randn(2, 6).bfloat16(), torch.randn(3, 6).bfloat16()], "interp", "loop", 1e-2)


@pytest.mark.parametrize("fn, match", [
    (lambda x: x.index_add(0, torch.zeros(5000, dtype=torch.long), torch.ones(5000, 1)),
     r"of 5000 entries into 5000 places .*at most 4096\^2 pairs a row\) at "),
])
def test_what_is_refused_says_why(fn, match) -> None:
    with pytest.raises(FrontendError, match=match):
        deplo.compile(fn, [torch.randn(5000, 1) if "5000" in match else torch.randn(2, 3)])


@pytest.mark.parametrize("fn", [
    lambda x: x.scatter(0, T([[0, 1, 5]]), 1.0),
    lambda x: x.scatter(1, T([[0, -1]]), 1.0),  # scatter takes no negative index
    lambda x: x.scatter_add(1, T([[0, 1, 7]]), torch.ones(1, 3)),
    lambda x: x.index_put((T([0, -5]),), torch.ones(2, 5)),
    lambda x: x.index_add(0, T([0, 4]), torch.ones(2, 5)),
    lambda x: x.gather(0, T([[0, 4]])),
    lambda x: x[:, T([5])],
    lambda x: torch.nn.functional.embedding(T([0, -1]), x),
])
def test_a_constant_index_out_of_range_is_eagers_error(fn) -> None:
    """eager raises; the kernels would drop the write or read past the dim. One line naming
    the op and the index, where the program holds the index as a constant."""
    x = torch.randn(4, 5)
    with pytest.raises((IndexError, RuntimeError)):
        fn(x)
    with pytest.raises(FrontendError, match=r"^'aten\.\w+\.\w+': index -?\d+ is out of bounds "
                                            r"for dimension \d with size \d at .*test_scatter"):
        deplo.compile(fn, [x])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("how", ["sum", "mean", "prod", "amax", "amin"])
def test_scatter_reduce(how: str, include_self: bool) -> None:
    """Repeated and missing places, f32 and int64 (a mean of integers floored, as aten; amax and
    amin of int64 with no identity past every value)."""
    index = T([[0, 2, 0, 1], [3, 3, 1, 0]])
    torch.manual_seed(0)
    for x, s in ((torch.randn(2, 5) * 4, torch.randn(2, 4) * 4),
                 (torch.randint(-9, 9, (2, 5)), torch.randint(-9, 9, (2, 4)))):
        for target, level in (("interp", "loop"), ("cpu", None)):
            _check(lambda x, s: x.scatter_reduce(1, index, s, how, include_self=include_self),
                   [x, s], target, level, 1e-5)
