"""deplo's op coverage, checked on PyTorch's own OpInfo samples, and the table in docs/ops.md.

`COVERAGE` is the one list of the ops deplo claims, by OpInfo name (and variant). For each, its
samples (`op.sample_inputs`, at most `CAP` per dtype, spread evenly over the list) run in fp32
and bf16 through deplo — the numpy interpreters at torch, tensor and loop level and the emitted
`.cu` on the CPU runtime — against PyTorch on the same tensors. Floating tensors of a sample
are program inputs; integer and bool tensors (indices, masks) and every other argument are
baked into the program. Each sample passes, or deplo refuses it at import with a message that
contains one of the entry's documented `refusals`.

    python test/python/opinfo/op_coverage.py            # run everything, print the table
    python test/python/opinfo/op_coverage.py --write    # ... and regenerate docs/ops.md
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "ops.md"
CAP = 4  # samples per op and dtype
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
INTERP_LEVELS = ("torch", "tensor", "loop")


@dataclass(frozen=True)
class Entry:
    """One claimed op: its OpInfo name and variant, how deplo takes it (for the docs), and the
    refusals it may meet — message fragment -> the documented reason."""

    name: str
    how: str
    variant: str = ""
    refusals: dict[str, str] = field(default_factory=dict)
    # ops whose order among equal values PyTorch leaves unspecified (topk, sort): the sample's
    # dim; an index output passes when the input read at it equals the input read at PyTorch's
    tie_dim: Callable | None = None

    @property
    def key(self) -> str:
        return f"{self.name}.{self.variant}" if self.variant else self.name


def _dim_arg(i: int, default: int = -1) -> Callable:
    """The sample's dim: its `i`-th positional argument, or its `dim` keyword."""
    return lambda s: s.args[i] if len(s.args) > i else s.kwargs.get("dim", default)


TRAINING_DROPOUT = {"dropout in training mode": "training-mode dropout is random"}

COVERAGE: list[Entry] = [
    # elementwise
    Entry("add", "torch.add (alpha: a mul)"),
    Entry("sub", "torch.sub (alpha: a mul)"),
    Entry("rsub", "torch.sub, operands swapped"),
    Entry("mul", "torch.mul"),
    Entry("div", "torch.div", "no_rounding_mode"),
    Entry("div", "floor_divide (a scalar divisor in f32, as aten)", "floor_rounding"),
    Entry("div", "trunc(a / b) in f32, two tensors' quotient rounded first; integers: C's /",
          "trunc_rounding"),
    Entry("maximum", "torch.maximum"),
    Entry("minimum", "torch.minimum"),
    Entry("pow", "torch.pow (x ** 2 is x * x)"),
    Entry("neg", "torch.neg"),
    Entry("exp", "torch.exp"),
    Entry("rsqrt", "torch.rsqrt"),
    Entry("sqrt", "torch.sqrt"),
    Entry("tanh", "torch.tanh"),
    Entry("sigmoid", "torch.sigmoid"),
    Entry("cos", "torch.cos"),
    Entry("sin", "torch.sin"),
    Entry("reciprocal", "torch.reciprocal"),
    Entry("nn.functional.relu", "torch.relu"),
    Entry("nn.functional.silu", "torch.silu"),
    Entry("nn.functional.gelu", "torch.gelu (erf or tanh)"),
    # comparisons, logic, selection
    *(Entry(n, f"torch.{n}") for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    Entry("logical_and", "torch.logical_and"),
    Entry("logical_or", "torch.logical_or"),
    Entry("logical_xor", "ne of the two truths"),
    Entry("where", "torch.where"),
    # reductions, normalization
    Entry("sum", "torch.sum"),
    Entry("mean", "torch.mean"),
    Entry("amax", "torch.amax"),
    Entry("softmax", "torch.softmax"),
    Entry("softmax", "torch.to + torch.softmax", "with_dtype"),
    Entry("nn.functional.layer_norm", "torch.layer_norm"),
    Entry("nn.functional.rms_norm", "torch.rms_norm"),
    # contractions
    Entry("matmul", "torch.matmul"),
    Entry("mm", "torch.matmul"),
    Entry("bmm", "torch.matmul"),
    Entry("addmm", "torch.matmul + mul + add"),
    Entry("nn.functional.linear", "torch.linear"),
    Entry("nn.functional.scaled_dot_product_attention", "torch.sdpa",
          refusals={"dropout in scaled_dot_product_attention": "training-mode dropout is random"}),
    # views and data movement
    Entry("reshape", "torch.reshape"),
    Entry("view", "torch.reshape"),
    Entry("permute", "torch.permute"),
    Entry("transpose", "torch.transpose"),
    Entry("t", "torch.transpose"),
    Entry("expand", "torch.expand"),
    Entry("unsqueeze", "torch.unsqueeze"),
    Entry("squeeze", "torch.squeeze"),
    Entry("select", "torch.select"),
    Entry("cat", "torch.cat"),
    Entry("nn.functional.embedding", "torch.embedding",
          refusals={"embedding_renorm_": "max_norm renormalizes the weight in place"}),
    Entry("nn.functional.embedding_bag", "each bag a mask of the positions (offsets), the rows "
          "gathered, masked and summed / averaged / maxed over them",
          refusals={"max_norm": "embedding's max_norm renormalizes the weight in place"}),
    Entry("contiguous", "(no op)"),
    Entry("clone", "(no op)"),
    # composites (decomposed at import into the torch ops above)
    Entry("true_divide", "torch.div"),
    Entry("view_as", "torch.reshape"),
    Entry("reshape_as", "torch.reshape"),
    Entry("expand_as", "torch.expand"),
    Entry("flatten", "torch.reshape"),
    Entry("unflatten", "torch.reshape"),
    Entry("movedim", "torch.permute"),
    Entry("stack", "torch.reshape + torch.cat"),
    Entry("split", "torch.slice per part"),
    Entry("split", "torch.slice per part", "list_args"),
    Entry("chunk", "torch.slice per part"),
    Entry("unbind", "torch.select per part"),
    Entry("narrow", "torch.slice",
          refusals={"data-dependent": "a start given as a tensor is data-dependent"}),
    Entry("square", "torch.mul"),
    Entry("nn.functional.dropout", "(eval mode: no op)", refusals=TRAINING_DROPOUT),
    Entry("clamp", "torch.maximum + torch.minimum"),
    Entry("clamp_min", "torch.maximum"),
    Entry("clamp_max", "torch.minimum"),
    Entry("masked_fill", "torch.where"),
    Entry("tril", "torch.arange + torch.le + torch.where"),
    Entry("triu", "torch.arange + torch.ge + torch.where"),
    Entry("log_softmax", "amax, sub, exp, sum, log (f32)"),
    Entry("log_softmax", "torch.to + amax, sub, exp, sum, log", "with_dtype"),
    Entry("logsumexp", "amax, where, sub, exp, sum, log, add (f32)"),
    Entry("var", "sum, div, sub, mul, sum, div (f32)"),
    Entry("var", "sum, div, sub, mul, sum, div (f32)", "unbiased"),
    Entry("std", "var + sqrt (f32)"),
    Entry("std", "var + sqrt (f32)", "unbiased"),
    Entry("linalg.vector_norm", "abs, amax/amin/sum/pow, sqrt (f32)"),
    Entry("norm", "linalg_vector_norm"),
    Entry("norm", "linalg_vector_norm", "fro"),
    Entry("norm", "linalg_vector_norm", "inf"),
    Entry("baddbmm", "torch.matmul + mul + add"),
    Entry("index_select", "torch.index"),
    Entry("nn.functional.group_norm", "reshape + layer_norm + mul + add (f32)"),
    Entry("nn.functional.instance_norm", "group_norm, a group a channel (running statistics: as batch_norm)"),
    # new ops
    Entry("abs", "torch.abs"),
    Entry("log", "torch.log"),
    Entry("erf", "torch.erf"),
    # special functions built from elementwise ops in float64 (frontend/special.py)
    Entry("erfc", "t exp(-x^2 + t P(t)), a Chebyshev fit (float32-accurate)"),
    Entry("erfinv", "Giles' polynomial, two Newton steps on erf"),
    Entry("lgamma", "Stirling's series past 12 (recurrence), reflection below 0"),
    Entry("digamma", "the asymptotic series past 12 (recurrence), reflection below 0"),
    *[Entry("mvlgamma", "PyTorch's decomposition (a sum of lgammas)", f"mvlgamma_p_{p}")
      for p in (1, 3, 5)],
    Entry("searchsorted", "a count of the sorted entries below each value (a comparison "
          "with each, summed)"),
    Entry("amin", "torch.amin"),
    Entry("cumsum", "torch.cumsum -> tir.scan"),
    Entry("cummax", "torch.cummax -> tir.scan max; the index a max-scan of the positions that set it"),
    Entry("cummin", "torch.cummin -> tir.scan min; the index a max-scan of the positions that set it"),
    Entry("logcumsumexp", "the running max plus the log of each prefix's sum of exp(x - it): "
                          "a masked sum, n^2 a row (up to 4096)"),
    Entry("cumprod", "torch.cumprod -> tir.scan"),
    Entry("argmax", "torch.argmax -> tir.reduce argmax"),
    Entry("argmin", "torch.argmin -> tir.reduce argmin"),
    Entry("max", "torch.amax + torch.argmax", "reduction_with_dim"),
    Entry("min", "torch.amin + torch.argmin", "reduction_with_dim"),
    Entry("topk", "ranked by counting (n^2 comparisons a row; NaN greatest, ties by index); a long row by chunks: each one's top k, then the candidates'", tie_dim=_dim_arg(1)),
    Entry("sort", "ranked by counting (n^2 comparisons a row; NaN greatest, ties by index); past 4096, runs of 256 so ranked, then merged pairwise by co-ranks (a search of gathers)", tie_dim=_dim_arg(0)),
    Entry("argsort", "ranked by counting (n^2 comparisons a row; NaN greatest, ties by index); past 4096, runs of 256 so ranked, then merged pairwise by co-ranks (a search of gathers)", tie_dim=_dim_arg(0)),
    Entry("msort", "sort along dim 0", tie_dim=lambda s: 0),
    Entry("kthvalue", "the element ranked k-th by counting (ties by index)",
          tie_dim=_dim_arg(1)),
    *[Entry(name, "the element ranked in the middle by counting (ties by index; " + nan + ")",
            tie_dim=_dim_arg(0))
      for name, nan in (("median", "a row with NaN: its first NaN"),
                        ("nanmedian", "the middle of the numbers"))],
    Entry("scatter", "matched: a place is hit by the index entries equal to it; the last write "
                     "wins (reduce='add': scatter_add; 'multiply': scatter_reduce's prod)"),
    Entry("scatter_add", "matched: a place is hit by the index entries equal to it; their sum added (f32)"),
    *[Entry("scatter_reduce", "matched: a place is hit by the index entries equal to it; "
                              f"their {how} (with the place's own value: include_self)", how)
      for how in ("sum", "mean", "prod", "amax", "amin")],
    Entry("index_fill", "matched: a place is hit by the index entries equal to it, every slice alike"),
    Entry("index_copy", "matched: a place is hit by the index entries equal to it, every slice alike; the last write wins"),
    Entry("index_add", "matched: a place is hit by the index entries equal to it, every slice alike; their sum added (f32)"),
    *[Entry("index_reduce", "matched: a place is hit by the index entries equal to it, every slice alike; "
                            f"their {how} (with the place's own value: include_self)", how)
      for how in ("prod", "mean", "amax", "amin")],
    Entry("masked_scatter", "the k-th element the mask picks takes source's k-th: k a cumsum "
                            "of the mask, read by torch.index"),
    Entry("cdist", "the p-norm of every row pair's difference (a reduction fused with the broadcast; f32)"),
    Entry("index_put", "integer indices: the indexed dims flattened, an index_copy (index_add with accumulate); a boolean mask: where"),
    Entry("nn.functional.batch_norm", "sub, rsqrt, mul, add per channel (f32; training: the batch's"
          " statistics, running ones not updated)"),
    Entry("gather", "torch.gather -> tir.gather"),
    Entry("take_along_dim", "PyTorch's decomposition (an integer remainder, a gather)"),
    Entry("bucketize", "PyTorch's decomposition (a binary search of integer floor divisions)",
          refusals={"data-dependent": "a 0-d input (its decomposition reads a size from the "
                                      "data)"}),
    Entry("nn.functional.conv1d", "torch.conv (im2col index maps, one K axis)"),
    Entry("nn.functional.conv2d", "torch.conv (im2col index maps, one K axis)"),
    Entry("nn.functional.conv_transpose1d", "zeros spread between inputs, a conv of the flipped kernel"),
    Entry("nn.functional.conv_transpose2d", "zeros spread between inputs, a conv of the flipped kernel"),
    Entry("nn.functional.conv_transpose3d", "zeros spread between inputs, a conv of the flipped kernel"),
    *[Entry(f"nn.functional.max_pool{n}d", "torch.max_pool; its indices: the windows gathered, "
            "one integer amax picking the first element equal to the max (or the last NaN)")
      for n in (1, 2, 3)],
    *[Entry(f"nn.functional.max_unpool{n}d", "PyTorch's decomposition (a scatter of the "
            "values at their indices)") for n in (1, 2, 3)],
    Entry("nn.functional.avg_pool2d", "torch.avg_pool"),
    # through PyTorch's own decompositions (frontend/decompose.py) or small converters
    Entry("floor", "torch.floor"),
    Entry("ceil", "torch.ceil"),
    Entry("trunc", "torch.trunc"),
    Entry("round", "torch.round (half to even)"),
    Entry("round", "mul, round, div", "decimals_3"),
    Entry("round", "div, round, mul", "decimals_neg_3"),
    Entry("sign", "torch.sign (NaN -> 0)"),
    Entry("expm1", "torch.expm1"),
    Entry("log1p", "torch.log1p"),
    Entry("log2", "torch.log2"),
    Entry("log10", "torch.log10"),
    Entry("exp2", "torch.exp2"),
    Entry("atan", "torch.atan"),
    Entry("asin", "torch.asin"),
    Entry("acos", "torch.acos"),
    Entry("sinh", "torch.sinh"),
    Entry("cosh", "torch.cosh"),
    Entry("tan", "torch.tan"),
    Entry("asinh", "torch.asinh"),
    Entry("acosh", "torch.acosh"),
    Entry("atanh", "torch.atanh"),
    Entry("isnan", "torch.ne(x, x)"),
    Entry("isinf", "abs + eq inf"),
    Entry("logical_not", "torch.eq(x, 0)"),
    Entry("nn.functional.hardtanh", "maximum + minimum"),
    Entry("nn.functional.relu6", "hardtanh(0, 6)"),
    Entry("nn.functional.leaky_relu", "gt + mul + where"),
    Entry("nn.functional.elu", "gt, expm1, mul, where"),
    Entry("nn.functional.selu", "elu"),
    Entry("nn.functional.celu", "elu"),
    Entry("nn.functional.softplus", "PyTorch's decomposition"),
    Entry("nn.functional.hardswish", "PyTorch's decomposition"),
    Entry("nn.functional.hardsigmoid", "PyTorch's decomposition"),
    Entry("nn.functional.mish", "PyTorch's decomposition"),
    Entry("nn.functional.logsigmoid", "PyTorch's decomposition"),
    Entry("nn.functional.glu", "PyTorch's decomposition"),
    Entry("nn.functional.softsign", "PyTorch's decomposition"),
    Entry("nn.functional.tanhshrink", "PyTorch's decomposition"),
    Entry("nn.functional.prelu", "PyTorch's decomposition"),
    Entry("any", "ne 0, amax, ne 0"),
    Entry("all", "ne 0, amin, ne 0"),
    Entry("prod", "torch.prod -> tir.reduce mul (f32)"),
    Entry("var_mean", "var + mean (f32)"),
    Entry("var_mean", "var + mean (f32)", "unbiased"),
    Entry("std_mean", "std + mean (f32)"),
    Entry("remainder", "fmod, plus b where the signs differ (f32)"),
    Entry("fmod", "C's fmod: an fma and one correction (f32)"),
    Entry("floor_divide", "(a - remainder) / b, as aten (f32)"),
    Entry("logaddexp", "max + log1p(exp(-|a - b|)) (f32)"),
    Entry("hypot", "m sqrt(1 + (n/m)^2), no overflow (f32)"),
    Entry("atan2", "torch.atan2 -> math.atan2"),
    Entry("fmax", "maximum, the other operand where one is NaN"),
    Entry("fmin", "minimum, the other operand where one is NaN"),
    Entry("signbit", "x < 0 or x is -0 (a NaN counts as positive)"),
    Entry("xlogy", "PyTorch's decomposition"),
    Entry("addcmul", "PyTorch's decomposition"),
    Entry("addcdiv", "PyTorch's decomposition"),
    Entry("lerp", "PyTorch's decomposition"),
    Entry("flip", "torch.index with a reversed arange"),
    Entry("fliplr", "PyTorch's decomposition"),
    Entry("flipud", "PyTorch's decomposition"),
    Entry("rot90", "PyTorch's decomposition"),
    Entry("roll", "PyTorch's decomposition"),
    Entry("repeat", "reshape + expand + reshape"),
    Entry("tile", "PyTorch's decomposition"),
    Entry("diff", "PyTorch's decomposition"),
    Entry("nn.functional.pad", "slices and cat with full", "constant"),
    Entry("nn.functional.pad", "PyTorch's decomposition", "reflect"),
    Entry("nn.functional.pad", "PyTorch's decomposition", "replicate"),
    Entry("nn.functional.pad", "PyTorch's decomposition", "circular"),
    Entry("nn.functional.pixel_shuffle", "PyTorch's decomposition"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "nearest"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "nearest-exact"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "linear"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "bilinear"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "bicubic"),
    Entry("nn.functional.interpolate", "PyTorch's decomposition (indexing)", "trilinear"),
    Entry("nn.functional.adaptive_avg_pool2d", "PyTorch's decomposition"),
    *[Entry(f"nn.functional.adaptive_max_pool{n}d", "each cell's window a mask of the plane; "
            "its max, and its first max's index (an argmax)") for n in (1, 2, 3)],
    Entry("einsum", "PyTorch's decomposition (bmm, permute, view; as_strided)"),
    Entry("copysign", "where(b < 0 or b is -0, -abs(a), abs(a))"),
    Entry("as_strided", "a gather of the flat input at offset + sum(i * stride)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("diagonal", "PyTorch's decomposition (as_strided)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("diagonal_copy", "PyTorch's decomposition (as_strided)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("linalg.diagonal", "PyTorch's decomposition (as_strided)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("diagonal_scatter", "where(j - i = offset, src read at the diagonal's position, x)"),
    Entry("select_scatter", "PyTorch's decomposition (where)"),
    Entry("slice_scatter", "PyTorch's decomposition (a gather, where)"),
    Entry("diag", "PyTorch's decomposition"),
    Entry("diag_embed", "PyTorch's decomposition"),
    Entry("diagflat", "PyTorch's decomposition"),
    Entry("trace", "PyTorch's decomposition (as_strided, sum)"),
    Entry("unfold", "PyTorch's decomposition (as_strided)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("unfold_copy", "PyTorch's decomposition (as_strided)",
          refusals={"as_strided of a non-contiguous tensor": "a view's storage (a strided input)"}),
    Entry("outer", "PyTorch's decomposition"),
    Entry("dot", "PyTorch's decomposition"),
    Entry("mv", "PyTorch's decomposition"),
    Entry("addbmm", "permute + reshape + matmul"),
    Entry("nn.functional.cosine_similarity", "PyTorch's decomposition"),
    Entry("nn.functional.normalize", "PyTorch's decomposition"),
    Entry("nn.functional.cross_entropy", "PyTorch's decomposition"),
    Entry("nn.functional.mse_loss", "PyTorch's decomposition"),
    Entry("nn.functional.l1_loss", "PyTorch's decomposition"),
    Entry("nn.functional.smooth_l1_loss", "PyTorch's decomposition"),
    Entry("nn.functional.huber_loss", "PyTorch's decomposition"),
    Entry("nn.functional.binary_cross_entropy_with_logits", "PyTorch's decomposition"),
    Entry("nn.functional.kl_div", "PyTorch's decomposition"),
    Entry("nn.functional.softmin", "PyTorch's decomposition"),
    Entry("logit", "PyTorch's decomposition"),
    Entry("frac", "PyTorch's decomposition"),
]


def opinfo(entry: Entry):
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if op.name == entry.name and op.variant_test_name == entry.variant:
            return op
    raise KeyError(f"no OpInfo {entry.key}")


def samples(entry: Entry, dtype: torch.dtype, cap: int | None = CAP) -> list:
    """The entry's OpInfo samples in `dtype` (seeded), at most `cap`, evenly spread."""
    op = opinfo(entry)
    if dtype not in op.supported_dtypes("cpu"):
        return []
    torch.manual_seed(0)
    found = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    if cap is None or len(found) <= cap:
        return found
    return [found[math.floor(i * len(found) / cap)] for i in range(cap)]


def program(op, sample) -> tuple[Callable, list[torch.Tensor]]:
    """The sample as a callable of its floating tensors; everything else is baked in."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, x in enumerate(leaves)
             if isinstance(x, torch.Tensor) and x.is_floating_point()]

    def fn(*xs):
        vals = list(leaves)
        for i, x in zip(slots, xs):
            vals[i] = x
        inp, args, kwargs = tree_unflatten(vals, spec)
        out = tree_flatten(op.op(inp, *args, **kwargs))[0]
        return out[0] if len(out) == 1 else tuple(out)

    return fn, [leaves[i].clone() for i in slots]


def _numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


@dataclass
class Outcome:
    passed: bool = False
    refused: str | None = None  # the documented reason
    failure: str | None = None


def check_sample(entry: Entry, sample, dtype: torch.dtype, cpu: bool = True) -> Outcome:
    """Run one sample through deplo at every level; the first failure is reported."""
    import deplo
    from deplo.frontend.errors import FrontendError
    from deplo.runtime.check import compare

    op = opinfo(entry)
    fn, xs = program(op, sample)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own (var with no degrees of freedom, ...)
        ref = fn(*xs)
    ref = ref if isinstance(ref, tuple) else (ref,)
    refs = [_numpy(t) for t in ref]
    types = ["bf16" if t.dtype == torch.bfloat16 else str(t.dtype) for t in ref]
    try:
        compiled = deplo.compile(fn, xs)
    except FrontendError as e:
        reason = next((r for frag, r in entry.refusals.items() if frag in str(e)), None)
        if reason is None:
            return Outcome(failure=f"import: {e}")
        return Outcome(refused=reason)
    except Exception as e:  # noqa: BLE001 - any crash is the finding
        return Outcome(failure=f"import: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    inputs = [_numpy(x) for x in xs] + list(compiled.program.params)
    targets = [("interp", lv) for lv in INTERP_LEVELS] + ([("cpu", None)] if cpu else [])
    for target, level in targets:
        where = level or target
        try:
            outs = compiled.run(inputs, target=target, level=level)
        except Exception as e:  # noqa: BLE001 - any crash is the finding
            return Outcome(failure=f"{where}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        expected = refs
        if entry.tie_dim is not None:
            outs, expected = _read_at_indices(entry, sample, xs[0], outs, refs)
        result = compare(outs, expected, types)
        if not result.ok:
            return Outcome(failure=f"{where}: {result.line()}")
    return Outcome(passed=True)


def _read_at_indices(entry: Entry, sample, x: torch.Tensor, outs, refs):
    """Each integer output (indices) of ours and of PyTorch's replaced by x read at it."""
    x, dim = _numpy(x).reshape(x.shape or (1,)), entry.tie_dim(sample)

    def read(i):
        i = np.asarray(i).astype(np.int64)
        shape = i.shape
        if i.ndim < x.ndim:  # one index a row, the dim dropped (kthvalue, median)
            i = np.expand_dims(i, dim % x.ndim)
        return np.take_along_axis(x, i.reshape(i.shape or (1,)), dim).reshape(shape)

    pairs = [(read(o), read(r)) if np.issubdtype(np.asarray(r).dtype, np.integer) else (o, r)
             for o, r in zip(outs, refs)]
    return [o for o, _ in pairs], [r for _, r in pairs]


def describe(sample) -> str:
    def show(x):
        if isinstance(x, torch.Tensor):
            return f"Tensor{tuple(x.shape)}:{str(x.dtype).removeprefix('torch.')}"
        return repr(x)

    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    inp, args, kwargs = tree_unflatten([show(x) for x in leaves], spec)
    return f"input={inp} args={args} kwargs={kwargs}"


# ---------------------------------------------------------------------------------------------
# the table


def table(results: dict[tuple[str, str], list[Outcome]]) -> str:
    """docs/ops.md from the outcomes per (entry key, dtype name)."""
    lines = [
        "# Op coverage",
        "",
        "Generated by `python test/python/opinfo/op_coverage.py --write`; the suite's OpInfo test",
        "(test/python/opinfo) checks that it is current. For each op deplo claims, PyTorch's own",
        f"OpInfo samples (at most {CAP} per dtype, spread evenly over the list) in fp32 and bf16 run",
        "through the numpy interpreters (torch, tensor and loop IR) and the emitted `.cu` on the CPU",
        "runtime, against PyTorch on the same tensors: fp32 within 1e-5 and bf16 within 1e-2 of the",
        "largest reference value, integers exactly, NaN and inf where PyTorch has them. A cell is",
        "samples passed / checked; the others were refused at import for the reason given.",
        "`op_coverage.py --all` runs every sample (about 4,900: all pass or are refused as listed).",
        "",
        "| OpInfo op | deplo | fp32 | bf16 | refused (why) |",
        "|---|---|---|---|---|",
    ]
    for e in COVERAGE:
        cells, why = [], set()
        for d in DTYPES:
            outs = results[(e.key, d)]
            cells.append(f"{sum(o.passed for o in outs)}/{len(outs)}" if outs else "-")
            why |= {o.refused for o in outs if o.refused}
        lines.append(f"| `{e.key}` | {e.how} | {cells[0]} | {cells[1]} | {'; '.join(sorted(why))} |")
    return "\n".join(lines) + "\n" + OUT_OF_SCOPE


OUT_OF_SCOPE = """
Also covered, outside OpInfo (test/python/ops): `type_as`, `rms_norm` modules, `embedding`,
indexing with tensors, `arange`/`full` and friends, `cat` with legacy empty inputs.

Rows marked "PyTorch's decomposition" have no converter of their own: a program that holds an op
deplo does not convert is traced again through PyTorch's decompositions of such ops
(frontend/decompose.py), and the ATen ops they yield are converted.

## Not covered, and why

- Ranking ops have no sorting network in Tensor IR (data moves by affine maps and gathers, no
  scatter): up to 4096 a row they rank by counting, at n^2 comparisons a row. A longer row is
  sorted as runs of at most 256 ranked so, then merged pairwise, each output read at its
  co-rank (an 8-pivot search of gathers a step): `sort`, `argsort`, `kthvalue`, `median` and a
  `topk` of k > 2048. A smaller `topk` takes a long row by chunks of max(2k, 256): each
  chunk's top k, then the top k of those candidates. Scatters match each place against each
  index entry, up to 4096^2 pairs a row.
- `index_put` with a boolean mask takes values that broadcast over the picked elements (one
  value, or one a trailing position); values with one entry per picked element depend on how
  many it picks (refused).
- Index inputs are bounds-checked on the host before a run where they address a table
  (embedding, `x[i]`, gather: eager's IndexError), not where they are a scatter's: an
  out-of-range entry of a scatter writes nothing (PyTorch raises; a kernel cannot). Python
  integers past 2^53 given as constants lose precision (a constant's value is a float64
  attribute).
- Training-mode dropout (random), `embedding(max_norm=...)` (renormalizes the weight in place),
  in-place updates of the program's inputs and `out=` variants: values are immutable here
  (refused). In-place ops on the program's own tensors (`y.diagonal().fill_(0)`,
  `y[0].add_(1)`) are taken as their functional forms (the scatters above).
- Integer arithmetic in kernels beyond index arithmetic (add, sub, mul, min, max, abs, sign, and
  fmod / remainder / div / floor_divide: C's `%` and `/`, corrected as aten's): elementwise kinds
  compute on floats; integer and bool tensors are indices, masks and argmax results. int8 and
  int16 are C's `signed char` and `short`; uint8 is carried in int16 (0..255, each uint8 result
  wrapped to its low 8 bits: `frontend/aten.py` `wrap_uint8`) and returned as uint8.
- `narrow` with a tensor start, `nonzero`, boolean-mask indexing: data-dependent (torch.export
  cannot trace the first; shapes would depend on values for the others).
- Matrix norms (`norm(p="nuc")`, an SVD).
- uint8 `interpolate` (bilinear, bicubic): computed in float32 and rounded, where aten's uint8
  path works in fixed point: a value can be one off (16690 of 101400 in one 270x270 -> 130x130
  sample).
- `searchsorted` of a sequence holding NaN where some number
  reaches the value (PyTorch's answer then depends on its search path: deplo counts the numbers
  below); float64 `erfc` and `erfinv` (float32-accurate approximations).
- `as_strided` of a view (a transposed or sliced tensor: the strides refer to a storage deplo's
  values do not have; `diagonal` of `x.t()`); `polygamma`, Bessel functions, `zeta`. An error
  names the op and the user's line.
- Random ops: everything PyTorch tags as drawing from its generator (`randn`, `rand_like`,
  `bernoulli`, `normal`, `multinomial`, ...). A compiled program is deterministic: the error
  names the op and asks for the random values as an input. (Inside `deplo run -c`, the
  expression's own `torch.randn(...)` calls are its inputs.)
- An input updated in place (`x.mul_(2)`): refused, naming the input (values are immutable here).
- `nll_loss` is not claimed: it runs (PyTorch's decomposition), exact in fp32, but in bf16 the
  decomposition rounds each step, up to 3% off on 3 of its 61 OpInfo samples (`cross_entropy`,
  whose decomposition reduces in f32, passes all).
"""


def run_all(cap: int | None = CAP) -> dict[tuple[str, str], list[Outcome]]:
    results = {}
    for e in COVERAGE:
        for d, dtype in DTYPES.items():
            outs = []
            for s in samples(e, dtype, cap):
                o = check_sample(e, s, dtype)
                if o.failure:
                    print(f"FAIL {e.key} {d} {describe(s)}: {o.failure}", file=sys.stderr)
                outs.append(o)
            results[(e.key, d)] = outs
    return results


if __name__ == "__main__":
    cap = None if "--all" in sys.argv else CAP
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    if only:
        COVERAGE[:] = [e for e in COVERAGE if e.key in only or e.name in only]
    res = run_all(cap)
    text = table(res)
    if "--write" in sys.argv:
        DOC.parent.mkdir(exist_ok=True)
        DOC.write_text(text)
    print(text)
    for d in DTYPES:
        n = sum(len(v) for (k, dd), v in res.items() if dd == d)
        p = sum(o.passed for (k, dd), v in res.items() if dd == d for o in v)
        r = sum(bool(o.refused) for (k, dd), v in res.items() if dd == d for o in v)
        print(f"{d}: {p} passed, {r} refused, {n - p - r} failed of {n}")
