"""PyTorch's fused inference fast path of nn.MultiheadAttention and nn.TransformerEncoderLayer,
taken apart into the ops deplo converts.

Under no_grad, in eval mode, those modules call one fused op (`_native_multi_head_attention`,
`_transformer_encoder_layer_fwd`) instead of their traceable forward. torch.export does not take
that path; Dynamo does, and PyTorch has no decomposition of either. These are decompositions for
frontend/decompose.py's table, checked against the fused ops themselves on the CPU
(test/python/ops/test_fast_path.py): the in-projection is one [3E, E] weight; a mask, bool or the
additive float mask the modules make (0 / -inf), hides the positions where it is nonzero;
mask_type 1 is a key-padding mask [B, S], 0 and 2 broadcast over [B, H, L, S].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                proj_weight, proj_bias, mask=None, need_weights=True,
                                average_attn_weights=True, mask_type=None):
    batch, rows, keys, dim = query.shape[0], query.shape[1], key.shape[1], embed_dim // num_head

    def heads(x, w, b, n):
        return F.linear(x, w, b).view(batch, n, num_head, dim).transpose(1, 2)

    (wq, wk, wv), (bq, bk, bv) = qkv_weight.chunk(3), qkv_bias.chunk(3)
    q, k, v = heads(query, wq, bq, rows), heads(key, wk, bk, keys), heads(value, wv, bv, keys)
    scores = (q / math.sqrt(dim)) @ k.transpose(-2, -1)
    if mask is not None:
        hidden = mask if mask.dtype == torch.bool else mask != 0
        if mask_type == 1:
            hidden = hidden.view(batch, 1, 1, keys)
        scores = scores.masked_fill(hidden, -math.inf)
    weights = scores.softmax(-1)
    out = (weights @ v).transpose(1, 2).reshape(batch, rows, embed_dim)
    out = F.linear(out, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    return out, weights.mean(1) if average_attn_weights else weights


def transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                  proj_bias, use_gelu, norm_first, eps, norm_weight_1,
                                  norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                                  ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                  mask_type=None):
    def norm(x, w, b):
        return F.layer_norm(x, (embed_dim,), w, b, eps)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    x = native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                    proj_weight, proj_bias, mask, False, True, mask_type)[0]
    x = x + src
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    x = F.linear(x, ffn_weight_1, ffn_bias_1)
    x = F.linear(F.gelu(x) if use_gelu else F.relu(x), ffn_weight_2, ffn_bias_2) + residual
    return x if norm_first else norm(x, norm_weight_2, norm_bias_2)


DECOMPOSITIONS = {aten._native_multi_head_attention.default: native_multi_head_attention,
                  aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd}
