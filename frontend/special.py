"""Special functions with no math-dialect op (erfc, erfinv, lgamma, digamma) and searchsorted,
built at import from the elementwise torch ops every level already runs.

The series and approximations are textbook ones: Stirling's series for log-gamma and the
asymptotic series of digamma after shifting the argument past 12 (recurrence), reflection for
negative arguments; M. Giles' single-precision erfinv ("Approximating the erfinv function",
GPU Computing Gems, 2010) refined by two Newton steps on erf, as PyTorch's own kernel refines
its first guess; the Chebyshev-fitted erfc of Numerical Recipes (2nd ed., 6.2; fractional
error below 1.2e-7). They compute in float64 whatever the input's float type: the shift and the
Newton steps cancel digits a float32 result needs, and erfc's exp(-x^2) would lose 6 digits of
x^2 past x = 9. erfc's fit is float32's precision and erfinv's Newton steps lose a float64's
tail, so both refuse float64 rather than give 7 digits. float64 lgamma near its roots 1 and 2
is 1e-13 off absolutely (the recurrence cancels), ~1e-7 relative to its tiny value there.
"""

from __future__ import annotations

import math

import torch
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import SSAValue

from deplo.dialects import torch as T
from deplo.frontend.aten import (
    Converter,
    Importer,
    _arg,
    _as_dtype,
    _cmp,
    _ew,
    _reduce,
    _reshape,
    _scalar,
    _t,
    where_from,
)
from deplo.frontend.dtypes import mlir_element_type
from deplo.frontend.errors import FrontendError

SHIFT = 12
"""lgamma and digamma recur up to an argument of at least 12, where their series' first
omitted term is below 1e-14 relative."""


class _Math:
    """Elementwise arithmetic on values of one float type, with Python numbers as scalars."""

    def __init__(self, im: Importer, like: SSAValue):
        self.im, self.like = im, like

    def c(self, v: float) -> SSAValue:
        return _scalar(self.im, v, self.like)

    def _v(self, v) -> SSAValue:
        return self.c(v) if isinstance(v, (int, float)) else v

    def __call__(self, name: str, *xs) -> SSAValue:
        return _ew(self.im, name, *map(self._v, xs))

    def cmp(self, name: str, a, b) -> SSAValue:
        return _cmp(self.im, name, self._v(a), self._v(b))

    def where(self, cond: SSAValue, a, b) -> SSAValue:
        a, b = self._v(a), self._v(b)
        shape = T.broadcast_shapes(T.broadcast_shapes(cond.type.get_shape(), a.type.get_shape()),
                                   b.type.get_shape())
        return self.im.insert(T.WhereOp(cond, a, b, _t(self.like, shape)), "where")

    def poly(self, x: SSAValue, coeffs: list[float]) -> SSAValue:
        """Horner's rule, the highest power's coefficient first."""
        p = self.c(coeffs[0])
        for a in coeffs[1:]:
            p = self("add", self("mul", p, x), a)
        return p

    def sinpi_cospi_arg(self, x: SSAValue) -> SSAValue:
        """pi (x - round(x)): sin and tan of pi x without the rounding of pi x for a large x
        (x - round(x) is exact)."""
        return self("mul", self("sub", x, self("round", x)), math.pi)


def _in(im: Importer, node: torch.fx.Node, rt: TensorType, dtype: torch.dtype) -> SSAValue:
    return _as_dtype(im, im.value(node.args[0]), mlir_element_type(dtype))


def _out(im: Importer, y: SSAValue, rt: TensorType) -> SSAValue:
    return _as_dtype(im, y, rt.element_type)


def _lgamma_nonnegative(m: _Math, y: SSAValue) -> SSAValue:
    """log|Gamma(y)| for y >= 0: Stirling's series at z = y (+ 12 below 12), less the log of
    y (y + 1) ... (y + 11) the recurrence multiplied in."""
    small = m.cmp("lt", y, SHIFT)
    z = m.where(small, m("add", y, SHIFT), y)
    prod = y
    for k in range(1, SHIFT):
        prod = m("mul", prod, m("add", y, k))
    u = m("div", 1.0, z)
    u2 = m("mul", u, u)
    series = m("mul", u, m.poly(u2, [-1 / 1680, 1 / 1260, -1 / 360, 1 / 12]))
    stirling = m("add", m("sub", m("mul", m("sub", z, 0.5), m("log", z)), z),
                 m("add", series, 0.5 * math.log(2 * math.pi)))
    return m("sub", stirling, m.where(small, m("log", prod), 0.0))


def _lgamma(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """lgamma: log|Gamma(x)|; x < 0 by reflection, log(pi / |sin(pi x)|) - lgamma(1 - x)
    (inf at the poles, 0 and the negative integers, and at +-inf)."""
    x = _in(im, node, rt, torch.float64)
    m = _Math(im, x)
    negative = m.cmp("lt", x, 0.0)
    pos = _lgamma_nonnegative(m, m.where(negative, m("sub", 1.0, x), x))
    sin = m("abs", m("sin", m.sinpi_cospi_arg(x)))
    reflected = m("sub", m("log", m("div", math.pi, sin)), pos)
    y = m.where(negative, reflected, pos)
    return _out(im, m.where(m.cmp("eq", m("abs", x), math.inf), math.inf, y), rt)


def _digamma(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """digamma: the asymptotic series at z = x (+ 12 below 12) less 1/x + ... + 1/(x + 11);
    x < 0 by reflection, digamma(1 - x) - pi / tan(pi x). -inf at +0, +inf at -0 (the sign of
    -1/x), NaN at the negative integers, as PyTorch."""
    x = _in(im, node, rt, torch.float64)
    m = _Math(im, x)
    negative = m.cmp("lt", x, 0.0)
    y = m.where(negative, m("sub", 1.0, x), x)
    small = m.cmp("lt", y, SHIFT)
    z = m.where(small, m("add", y, SHIFT), y)
    recurrence = m("div", 1.0, y)
    for k in range(1, SHIFT):
        recurrence = m("add", recurrence, m("div", 1.0, m("add", y, k)))
    u = m("div", 1.0, z)
    u2 = m("mul", u, u)
    series = m("mul", u2, m.poly(u2, [1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12]))
    pos = m("sub", m("sub", m("sub", m("log", z), m("mul", u, 0.5)), series),
            m.where(small, recurrence, 0.0))
    reflected = m("sub", pos, m("div", math.pi, m("tan", m.sinpi_cospi_arg(x))))
    pole = m.cmp("logical_and", negative, m.cmp("eq", x, m("round", x)))
    nan = m("div", m.c(0.0), m.c(0.0))
    return _out(im, m.where(pole, nan, m.where(negative, reflected, pos)), rt)


GILES_CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
GILES_TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _erfinv(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """erfinv: Giles' polynomial in w = -log(1 - x^2) (central below w = 5, the tail in
    sqrt(w) above), then two Newton steps y -= (erf(y) - x) / (2/sqrt(pi) exp(-y^2)).
    +-inf at +-1, NaN past them. Newton on erf cannot resolve 1 - |x| below ~1e-9 (erf is 1
    there to a double's precision), so float64 erfinv is refused; float32's 1 - |x| is at
    least 6e-8."""
    _refuse_float64(node, rt, "erfinv", "float32's (1 - |x| of a float64 past ~1e-9 is "
                                        "lost in erf's rounding)")
    x = _in(im, node, rt, torch.float64)
    m = _Math(im, x)
    w = m("neg", m("log", m("mul", m("sub", 1.0, x), m("add", x, 1.0))))
    central = m.poly(m("sub", w, 2.5), GILES_CENTRAL)
    tail = m.poly(m("sub", m("sqrt", w), 3.0), GILES_TAIL)
    y = m("mul", m.where(m.cmp("lt", w, 5.0), central, tail), x)
    for _ in range(2):
        slope = m("mul", m("exp", m("neg", m("mul", y, y))), 2 / math.sqrt(math.pi))
        y = m("sub", y, m("div", m("sub", m("erf", y), x), slope))
    return _out(im, m.where(m.cmp("eq", m("abs", x), 1.0), m("mul", x, math.inf), y), rt)


NR_ERFC = [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
           0.09678418, 0.37409196, 1.00002368]


def _erfc(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """erfc: t exp(-z^2 - 1.26551223 + t P(t)) with t = 1 / (1 + z/2), z = |x|, and 2 minus
    that for x < 0: no cancellation where erfc is tiny (float32's 1 - erf(x) is 0 past 4)."""
    _refuse_float64(node, rt, "erfc", "float32 (7 digits)")
    x = _in(im, node, rt, torch.float64)
    m = _Math(im, x)
    z = m("abs", x)
    t = m("div", 1.0, m("add", m("mul", z, 0.5), 1.0))
    exponent = m("add", m("sub", m("neg", m("mul", z, z)), 1.26551223),
                 m("mul", t, m.poly(t, NR_ERFC)))
    tail = m("mul", t, m("exp", exponent))
    return _out(im, m.where(m.cmp("lt", x, 0.0), m("sub", 2.0, tail), tail), rt)


def _refuse_float64(node: torch.fx.Node, rt: TensorType, name: str, accuracy: str) -> None:
    if str(rt.element_type) == "f64":
        raise FrontendError(f"'{node.target}' in float64: deplo's {name} is accurate to "
                            f"{accuracy}, not float64 {where_from(node)}")


def _searchsorted(im: Importer, node: torch.fx.Node, rt: TensorType) -> SSAValue:
    """searchsorted: the number of sorted entries below each value (<= with right=True or
    side='right'): a comparison of every value with every entry of its row, summed. `sorter`
    sorts the sequence first (a gather); out_int32 gives int32. Both in their common type. As
    PyTorch's binary search: a NaN value goes past the end; NaN entries (sorted last) count as
    below a value no number reaches (where some number does, PyTorch's answer depends on its
    search path: deplo's is the count of numbers)."""
    seq_arg, value_arg = node.args[0], node.args[1]
    value_meta = value_arg.meta["val"] if isinstance(value_arg, torch.fx.Node) else value_arg
    common = mlir_element_type(torch.result_type(seq_arg.meta["val"], value_meta)
                               if not isinstance(value_meta, torch.Tensor) else
                               torch.promote_types(seq_arg.meta["val"].dtype, value_meta.dtype))
    seq = _as_dtype(im, im.value(seq_arg), common)
    values = _as_dtype(im, im.value(value_arg, TensorType(common, [])), common)
    right = bool(_arg(node, 3, "right", False)) or _arg(node, 4, "side") == "right"
    sorter = _arg(node, 5, "sorter")
    if sorter is not None:
        idx = im.value(sorter)
        seq = im.insert(T.GatherOp(seq, idx, seq.type.get_num_dims() - 1, seq.type), "sorter")
    n = seq.type.get_shape()[-1]
    vshape = list(values.type.get_shape())
    lead = list(seq.type.get_shape()[:-1])
    # [*lead, values..., 1] against [*lead, 1, n]: a 1-D sequence serves every value
    v = _reshape(im, values, [*vshape, 1], "searchsorted")
    s = _reshape(im, seq, [*lead, *([1] * (len(vshape) - len(lead))), n], "searchsorted")
    i64 = mlir_element_type(torch.int64)

    def count(cond: SSAValue) -> SSAValue:
        return _reduce(im, "sum", _as_dtype(im, cond, i64), [-1], False)

    found = count(_cmp(im, "le" if right else "lt", s, v))
    if not isinstance(common, IntegerType):
        m = _Math(im, found)
        none_above = m.cmp("eq", count(_cmp(im, "gt" if right else "ge", s, v)), 0)
        found = m("add", found, m.where(none_above, count(_cmp(im, "ne", s, s)), 0))
        v_nan = _reshape(im, _cmp(im, "ne", values, values), vshape, "searchsorted")
        found = m.where(v_nan, n, found)
    return _as_dtype(im, found, rt.element_type)


aten = torch.ops.aten
SPECIAL_CONVERTERS: dict[object, Converter] = {
    aten.lgamma.default: _lgamma,
    aten.digamma.default: _digamma,
    aten.erfinv.default: _erfinv,
    aten.erfc.default: _erfc,
    aten.searchsorted.Tensor: _searchsorted,
    aten.searchsorted.Scalar: _searchsorted,
}
