"""torch dtype <-> MLIR element type: one table for the importer and the runtimes."""

from __future__ import annotations

import numpy as np
import torch
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute

from deplo.frontend.errors import FrontendError

_TORCH_TO_MLIR = {
    torch.float32: Float32Type,
    torch.float16: Float16Type,
    torch.bfloat16: BFloat16Type,
    torch.float64: Float64Type,
}


def mlir_element_type(dtype: torch.dtype) -> Attribute:
    if dtype in _TORCH_TO_MLIR:
        return _TORCH_TO_MLIR[dtype]()
    if dtype in (torch.int64, torch.int32, torch.int16, torch.int8):
        return IntegerType(dtype.itemsize * 8)
    if dtype == torch.uint8:  # (MLIR's integers here are signless and computed signed)
        return IntegerType(16)  # values 0..255; the importer wraps each uint8 result
    if dtype == torch.bool:
        return IntegerType(1)
    raise FrontendError(f"unsupported dtype {dtype} (deplo takes float32, float16, bfloat16, "
                        "float64, int64, int32, int16, int8, uint8 and bool tensors)")


def rounded(value: float, elt: Attribute) -> float:
    """A Python number as the float type `elt` holds it: past its range ±inf, as a cast (an
    fp16 mask's -1e9 is -inf), not an error packing the constant."""
    dtype = next(d for d, t in _TORCH_TO_MLIR.items() if isinstance(elt, t))
    return torch.tensor(float(value), dtype=dtype).item()


def to_numpy(t: torch.Tensor) -> np.ndarray | None:
    """A CPU copy of a tensor as numpy (bf16 as float32), or None for meta tensors."""
    if t.device.type == "meta":
        return None
    if t.layout != torch.strided:
        raise FrontendError(f"a {t.layout} tensor: deplo takes dense tensors (.to_dense())")
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
