"""The one table between numpy dtypes, MLIR element types and the C types the emitter prints.

Why one table: the CUDA printer, the CPU launcher and the GPU launcher must agree on how a
buffer's element type is spelled, or a kernel reads garbage.
"""

from __future__ import annotations

import numpy as np

# C spelling -> numpy dtype (bf16 has no numpy dtype: buffers of it travel as uint16 bit patterns)
C_TO_NUMPY: dict[str, np.dtype] = {
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
    "__half": np.dtype(np.float16),
    "__nv_bfloat16": np.dtype(np.uint16),
    "int": np.dtype(np.int32),
    "short": np.dtype(np.int16),
    "signed char": np.dtype(np.int8),
    "long long": np.dtype(np.int64),
    "unsigned int": np.dtype(np.uint32),
    "bool": np.dtype(np.bool_),
}

# MLIR element type name (as printed by xDSL) -> C spelling
MLIR_TO_C: dict[str, str] = {
    "f32": "float",
    "f64": "double",
    "f16": "__half",
    "bf16": "__nv_bfloat16",
    "i32": "int",
    "i16": "short",
    "i8": "signed char",
    "i64": "long long",
    "index": "int",
    "i1": "bool",
}


def parse_param_type(c_type: str) -> tuple[str, bool]:
    """'const float*' -> ('float', True); 'int' -> ('int', False). Raises on an unknown type."""
    t = c_type.replace("__restrict__", "").replace("const ", "").strip()
    is_ptr = t.endswith("*")
    base = t.rstrip("*").strip()
    if base not in C_TO_NUMPY:
        raise ValueError(f"unsupported kernel parameter type {c_type!r}")
    return base, is_ptr


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float values -> bf16 bit patterns (uint16), rounded to nearest even; uint16 passes."""
    a = np.asarray(x)
    if a.dtype == np.uint16:
        return a.copy()
    bits = np.array(a, dtype=np.float32, order="C").view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(np.isnan(a), np.uint32(0x7FC0), rounded).astype(np.uint16)


def from_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32 holding the same values."""
    return (np.asarray(x).astype(np.uint32) << np.uint32(16)).view(np.float32)
