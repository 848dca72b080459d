"""Marshal Python arguments for a kernel launch, with canary padding around every buffer.

Why canaries: every pointer argument is copied into the middle of a buffer with 4 KB of canary
on each side: FF FF BF FF FF FF F7 FF repeated, a float64 signalling NaN whose two float32
halves are NaNs other than the quiet 0xFFFFFFFF, the first a signalling one (every f16/bf16
half a NaN too; every int negative). An out-of-bounds read then sees NaN instead of whatever
lies next to the array, which makes the result wrong deterministically; an out-of-bounds write
changes a pad, which the check after the launch reports with the argument's index. Arithmetic
quiets a signalling NaN (0xFFFFFFFF), so a NaN computed from a pad and written past an
output's end changes that pad too (with all-0xFF pads it wrote back the same bytes, unseen).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from deplo.runtime.ctypes_map import C_TO_NUMPY, parse_param_type, to_bf16_bits

PAD = 4096
ALIGN = 256
CANARY = np.array([0xFF, 0xFF, 0xBF, 0xFF, 0xFF, 0xFF, 0xF7, 0xFF], np.uint8)  # 0xFFF7FFFF_FFBFFFFF
_PADDING = np.tile(CANARY, PAD // len(CANARY) + 1)  # (one pad at any phase, made once)


def _canary(start: int, n: int) -> np.ndarray:
    """The canary bytes at offsets start .. start + n (n <= PAD) of a padded buffer (PAD and
    ALIGN keep each element's bytes at the same phase): a view, as every launch pads."""
    phase = start % len(CANARY)
    return _PADDING[phase:phase + n]


@dataclass
class Padded:
    """One argument's padded copy: `buf` = PAD canary bytes | data | PAD canary bytes."""
    array: np.ndarray
    buf: np.ndarray
    index: int
    writable: bool
    pad: int


@dataclass
class Marshalled:
    argv: ctypes.Array  # void*[n], each pointing at the storage of one argument
    padded: list[Padded] = field(default_factory=list)
    keep: list = field(default_factory=list)  # storage argv points into


def _pad(arr: np.ndarray, pad: int) -> np.ndarray:
    """A copy of arr's bytes with `pad` canary bytes on each side; pad=0 gives an exact-size
    allocation of its own (what ASan needs to see an overflow)."""
    n = arr.nbytes
    if not pad:
        return arr.reshape(-1).view(np.uint8).copy()
    raw = np.empty(n + 2 * PAD + ALIGN, np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    buf = raw[off:off + n + 2 * PAD]
    buf[:PAD] = _canary(0, PAD)
    buf[PAD + n:] = _canary(PAD + n, PAD)
    buf[PAD:PAD + n] = arr.reshape(-1).view(np.uint8)
    return buf


def _check_array(i: int, c_type: str, arr) -> None:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"argument {i} ({c_type}) must be a numpy array, got {type(arr).__name__}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"argument {i} ({c_type}) must be C-contiguous")
    try:
        base, _ = parse_param_type(c_type)
    except ValueError:
        return  # a pointer to a type the table does not know (float4, unsigned char): any dtype
    want = C_TO_NUMPY[base]
    ok = arr.dtype == want or (base == "__nv_bfloat16" and arr.dtype.itemsize == 2)
    if not ok:
        raise TypeError(f"argument {i} ({c_type}) needs dtype {want}, got {arr.dtype}")


def _scalar(i: int, c_type: str, value) -> np.ndarray:
    try:
        base, _ = parse_param_type(c_type)
    except ValueError as e:
        raise TypeError(f"argument {i}: {e}") from None
    if base == "__nv_bfloat16":
        return np.array([to_bf16_bits(np.float32(value))], np.uint16)
    if isinstance(value, np.ndarray):
        raise TypeError(f"argument {i} ({c_type}) is a scalar, got an array")
    try:
        return np.array([value], C_TO_NUMPY[base])
    except OverflowError:
        raise ValueError(f"argument {i} ({c_type}): {value!r} does not fit") from None


def is_pointer(c_type: str) -> bool:
    return c_type.replace("__restrict__", "").strip().endswith("*")


def marshal(params: list[str], args: list, canary: bool = True) -> Marshalled:
    """Padded copies of the arrays (exact-size copies if not canary) and an argv for the
    launcher's thunk."""
    pad = PAD if canary else 0
    if len(args) != len(params):
        raise TypeError(f"kernel takes {len(params)} arguments, got {len(args)}")
    m = Marshalled(argv=(ctypes.c_void_p * max(1, len(params)))())
    by_addr: dict[tuple[int, int], Padded] = {}
    for i, (c_type, a) in enumerate(zip(params, args)):
        if is_pointer(c_type):
            _check_array(i, c_type, a)
            key = (a.__array_interface__["data"][0], a.nbytes)
            writable = "const" not in c_type.split("*")[0].split()
            p = by_addr.get(key)
            if p is None:
                for q in m.padded:
                    if a.nbytes and q.array.nbytes and np.shares_memory(a, q.array):
                        raise ValueError(f"arguments {q.index} and {i} overlap without being the "
                                         "same buffer; pass the same array or disjoint ones")
                p = Padded(a, _pad(a, pad), i, writable, pad)
                by_addr[key] = p
                m.padded.append(p)
            p.writable |= writable
            ptr = ctypes.c_void_p(p.buf.ctypes.data + pad)
            m.keep.append(ptr)
            m.argv[i] = ctypes.addressof(ptr)
        else:
            s = _scalar(i, c_type, a)
            m.keep.append(s)
            m.argv[i] = s.ctypes.data
    return m


def check_and_copy_back(m: Marshalled) -> list[str]:
    """Copy every writable buffer back into its array; return one message per damaged pad."""
    problems = []
    for p in m.padded:
        n, pad = p.array.nbytes, p.pad
        before = np.flatnonzero(p.buf[:pad] != _canary(0, pad))
        after = np.flatnonzero(p.buf[pad + n:] != _canary(pad + n, pad))
        if before.size:
            problems.append(f"out-of-bounds write next to argument {p.index}: {before.size} bytes "
                            f"changed up to {pad - before.min()} bytes before its start")
        if after.size:
            problems.append(f"out-of-bounds write next to argument {p.index}: {after.size} bytes "
                            f"changed up to {after.max() + 1} bytes past its end "
                            f"(it has {n} bytes)")
        if p.writable and n:
            p.array.reshape(-1).view(np.uint8)[:] = p.buf[pad:pad + n]
    return problems
