"""uint8 bilinear / bicubic resizing as PyTorch's CPU kernel computes it.

PyTorch's decompositions of `upsample_bilinear2d` / `upsample_bicubic2d` (and their antialiased
`_aa` forms) interpolate in float32 and round once. Its CPU kernel for uint8 does not: it is
Pillow's separable fixed-point resampling (UpSampleKernel.cpp, `_compute_index_ranges_int16_weights`
and `basic_loop_*<uint8_t>`): weights computed in double, scaled to int16 with the most bits that
fit, one 1-d pass per resized dim (last dim first), each rounded (+ half, arithmetic shift) and
clamped to [0, 255] before the next. The float path differs by 1 on ties and by more for bicubic,
whose intermediate clamp matters. Weights and taps depend only on shapes, so they are constants.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten


def _filter(x, taps, antialias):
    """PyTorch's aa_filter, in its operation order: linear, or Keys' cubic with a = -0.5 with
    antialias (Pillow) and -0.75 without (OpenCV)."""
    x = x.abs()
    if taps == 2:
        return (1.0 - x).clamp_min(0.0)
    a = -0.5 if antialias else -0.75
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, 0.0))


def _taps(n_in, n_out, align_corners, scale_factor, taps, antialias):
    """(input index [n_out, k], weight [n_out, k] in float64) as PyTorch's
    `_compute_indices_min_size_weights[_aa]` compute them, sums in the same order (the weights are
    rounded to int16 next, so one ulp can move a result by one). Shapes only: the importer folds
    it to constants."""
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor and scale_factor > 0 else n_in / n_out
    i = torch.arange(n_out, dtype=torch.float64)[:, None]
    if antialias:
        support = taps * 0.5 * max(scale, 1.0)
        k = math.ceil(support) * 2 + 1
        center = scale * (i + 0.5)
        lo = (center - support + 0.5).trunc().clamp_min(0)
        size = ((center + support + 0.5).trunc().clamp_max(n_in) - lo).clamp(0, k)
        j = torch.arange(k, dtype=torch.float64)
        w = torch.where(j < size, _filter((j + lo - center + 0.5) / max(scale, 1.0), taps, True), 0.0)
        total = w[:, 0]
        for c in range(1, k):
            total = total + w[:, c]
        w = torch.where(total[:, None] != 0, w / total[:, None], w)
        return (j + lo).clamp_max(n_in - 1).long(), w
    sup = taps // 2
    src = scale * i if align_corners else scale * (i + 0.5) - 0.5
    if taps == 2 and not align_corners:
        src = src.clamp_min(0.0)
    idx = src.float().floor().double().clamp_max(n_in - 1)  # floorf, as guard_index_and_lambda
    lam = (src - idx).clamp(0.0, 1.0)
    lo = (idx - sup + 1).clamp_min(0)
    # a tap past an edge adds its weight to the edge's: slot = clamped input index - lo
    w = []
    for s in range(taps):
        acc = torch.zeros_like(lam)
        for j in range(taps):
            at = (idx - sup + 1 + j).clamp(0, n_in - 1) - lo
            acc = acc + torch.where(at == s, _filter(float(j + 1 - sup) - lam, taps, False), 0.0)
        w.append(acc)
    return (lo + torch.arange(taps)).clamp_max(n_in - 1).long(), torch.cat(w, 1)


def _pass(x, dim, n_out, align_corners, scale_factor, taps, antialias):
    """One 1-d pass along `dim` in int32 fixed point, rounded and clamped back to uint8."""
    index, w = _taps(x.shape[dim], n_out, align_corners, scale_factor, taps, antialias)
    # the most fraction bits that keep 2 * the largest weight under 2**15
    top = w.max()
    prec = (0.5 + top * 2.0 ** torch.arange(1, 23, dtype=torch.float64) < 2 ** 15).sum()
    one = 2.0 ** prec.double()
    v = w * one
    weights = (v + torch.where(v < 0, -0.5, 0.5)).trunc().to(torch.int32)
    t = (x.movedim(dim, -1)[..., index].to(torch.int32) * weights).sum(-1)
    t = t + (one / 2).to(torch.int32)
    return torch.bitwise_right_shift(t, prec.to(torch.int32)).clamp(0, 255).to(torch.uint8) \
        .movedim(-1, dim)


def _resampling(taps, antialias, fallback):
    def vec(x, output_size, align_corners, scale_factors):
        if x.dtype != torch.uint8:
            return fallback(x, output_size, align_corners, scale_factors)
        nd = x.dim() - 2
        scales = list(scale_factors) if scale_factors else [None] * nd
        if output_size is None:
            output_size = [math.floor(x.shape[2 + d] * scales[d]) for d in range(nd)]
        for d in reversed(range(nd)):  # the last (contiguous) dim first, as PyTorch
            if output_size[d] != x.shape[2 + d]:
                x = _pass(x, 2 + d, output_size[d], align_corners, scales[d], taps, antialias)
        return x
    return vec


def decompositions() -> dict:
    """uint8-exact decompositions of the 2-d resizes (others go to PyTorch's own)."""
    from torch._decomp import decomposition_table

    ops = {aten.upsample_bilinear2d.vec: (2, False), aten.upsample_bicubic2d.vec: (4, False),
           aten._upsample_bilinear2d_aa.vec: (2, True), aten._upsample_bicubic2d_aa.vec: (4, True)}
    return {op: _resampling(taps, aa, decomposition_table[op]) for op, (taps, aa) in ops.items()}
