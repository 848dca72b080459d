"""kernel-to-cuda: Kernel IR (kernel + scf + arith + math + memref) -> CUDA IR (a C++ syntax tree).

Each `kernel.func` becomes one `cuda.kernel`, op by op through a value map:

    %v = memref.load %x[%b, %t] : memref<32x256xf32>   ->  %v = cuda.load %x[%lin] : !cuda.ptr<f32, const, restrict>
    %s = arith.addf %a, %v : f32                        ->  %s = cuda.binary add %a, %v : f32
    %e = math.exp %s : f32                              ->  %e = cuda.call "expf"(%s) : (f32) -> f32
    scf.for / scf.if / scf.yield                        ->  cuda.for / cuda.if / cuda.yield
    kernel.launch @k(...)                               ->  cuda.launch @k(...) grid(..) block(..) smem(N)

`N`, the launch's dynamic shared bytes, is 0 unless the kernel's shared buffers are more than
SHARED_MEMORY_BYTES (48 KB, what it may declare statically): then each is a part of the dynamic
shared memory (`cuda.shared dynamic(offset)`) and N their total.

`index` becomes `int` (i32); memref indices are linearized row-major with the static shape;
buffers never stored to become `const T* __restrict__` parameters; f16/bf16 arithmetic is done in
float (`__half2float` ... `__float2half`). `C_OPS` is the one table from arith/math to C. An op
without a row is an error naming the op and its location: the conversion leaves nothing behind.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    UnknownLoc,
    i1,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from deplo import origin
from deplo.dialects import cuda, kernel
from deplo.dialects.kernel import dynamic_part_bytes
from deplo.lowering.legality import ConversionError, check_converted

F32 = Float32Type()
HALF = (Float16Type(), BFloat16Type())
UNSIGNED = {w: IntegerType(w, Signedness.UNSIGNED) for w in (8, 16, 32, 64)}

# The one table: arith/math op -> (form, C name).
#   binary/ubinary: cuda.binary (ubinary on unsigned operands); unary: cuda.unary;
#   call: a libm function (`expf` for f32 and half, `exp` for f64); minmax: compare + select;
#   nanminmax: the same, keeping a NaN first operand (arith.maximumf/minimumf propagate NaN, as
#   torch.amax, relu and clamp do; C's fmax returns the other operand).
C_OPS: dict[str, tuple[str, str]] = {
    "arith.addf": ("binary", "add"), "arith.addi": ("binary", "add"),
    "arith.subf": ("binary", "sub"), "arith.subi": ("binary", "sub"),
    "arith.mulf": ("binary", "mul"), "arith.muli": ("binary", "mul"),
    "arith.divf": ("binary", "div"), "arith.divsi": ("binary", "div"),
    "arith.divui": ("ubinary", "div"), "arith.remsi": ("binary", "rem"),
    "arith.remui": ("ubinary", "rem"),
    "arith.andi": ("binary", "and"), "arith.ori": ("binary", "or"),
    "arith.xori": ("binary", "xor"), "arith.shli": ("binary", "shl"),
    "arith.shrsi": ("binary", "shr"), "arith.shrui": ("ubinary", "shr"),
    "arith.negf": ("unary", "neg"),
    "arith.maximumf": ("nanminmax", "gt"), "arith.maxnumf": ("call", "fmax"),
    "arith.minimumf": ("nanminmax", "lt"), "arith.minnumf": ("call", "fmin"),
    "arith.maxsi": ("minmax", "gt"), "arith.minsi": ("minmax", "lt"),
    "arith.maxui": ("uminmax", "gt"), "arith.minui": ("uminmax", "lt"),
    "math.absf": ("call", "fabs"), "math.ceil": ("call", "ceil"), "math.floor": ("call", "floor"),
    "math.round": ("call", "round"), "math.roundeven": ("call", "rint"),
    "math.trunc": ("call", "trunc"), "math.copysign": ("call", "copysign"),
    "math.exp": ("call", "exp"), "math.exp2": ("call", "exp2"), "math.expm1": ("call", "expm1"),
    "math.log": ("call", "log"), "math.log2": ("call", "log2"), "math.log10": ("call", "log10"),
    "math.log1p": ("call", "log1p"), "math.sqrt": ("call", "sqrt"), "math.rsqrt": ("call", "rsqrt"),
    "math.cbrt": ("call", "cbrt"), "math.powf": ("call", "pow"), "math.fma": ("call", "fma"),
    "math.tanh": ("call", "tanh"), "math.sinh": ("call", "sinh"), "math.cosh": ("call", "cosh"),
    "math.sin": ("call", "sin"), "math.cos": ("call", "cos"), "math.tan": ("call", "tan"),
    "math.asin": ("call", "asin"), "math.acos": ("call", "acos"), "math.atan": ("call", "atan"),
    "math.asinh": ("call", "asinh"), "math.acosh": ("call", "acosh"),
    "math.atanh": ("call", "atanh"),
    "math.atan2": ("call", "atan2"), "math.erf": ("call", "erf"),
}
# cmpi / cmpf predicate -> (cuda.compare kind, flag): for cmpi the flag means unsigned operands,
# for cmpf it means "negate" (unordered = not the opposite ordered comparison).
CMPI = {"eq": ("eq", 0), "ne": ("ne", 0), "slt": ("lt", 0), "sle": ("le", 0), "sgt": ("gt", 0),
        "sge": ("ge", 0), "ult": ("lt", 1), "ule": ("le", 1), "ugt": ("gt", 1), "uge": ("ge", 1)}
CMPF = {"oeq": ("eq", 0), "ogt": ("gt", 0), "oge": ("ge", 0), "olt": ("lt", 0), "ole": ("le", 0),
        "une": ("ne", 0), "ugt": ("le", 1), "uge": ("lt", 1), "ult": ("ge", 1), "ule": ("gt", 1)}
CASTS = {"arith.index_cast", "arith.sitofp", "arith.uitofp", "arith.fptosi",
         "arith.fptoui", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci"}
SPECIAL = {kernel.ThreadIdOp: "threadIdx", kernel.BlockIdOp: "blockIdx",
           kernel.BlockDimOp: "blockDim", kernel.GridDimOp: "gridDim"}
# Names a kernel (an `extern "C"` function) must not take: functions that the C, POSIX, libm
# and CUDA headers declare (`pow`, `div`, `index`, `select`, `min`, ...), C++ keywords and
# alternative tokens. Kernel names come from the torch ops they compute; a clash gets `_k`.
C_TAKEN = frozenset({
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
    "copysign", "cos", "cosh", "cospi", "erf", "erfc", "erfinv", "erfcinv", "exp", "exp10",
    "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod", "frexp", "gamma",
    "hypot", "ilogb", "isfinite", "isinf", "isnan", "j0", "j1", "jn", "ldexp", "lgamma",
    "llrint", "llround", "log", "log10", "log1p", "log2", "logb", "lrint", "lround", "max",
    "min", "modf", "nan", "nearbyint", "nextafter", "norm", "normcdf", "pow", "rcbrt",
    "remainder", "remquo", "rint", "rnorm", "round", "rsqrt", "scalbln", "scalbn", "signbit",
    "sin", "sincos", "sinh", "sinpi", "sqrt", "tan", "tanh", "tgamma", "trunc", "y0", "y1",
    "yn", "abort", "access", "alarm", "atof", "atoi", "atol", "bsearch", "calloc", "clock",
    "close", "div", "dup", "exit", "fork", "free", "getenv", "index", "kill", "labs", "link",
    "malloc", "memcpy", "memmove", "memset", "open", "pause", "pipe", "printf", "puts", "qsort",
    "rand", "random", "read", "realloc", "remove", "rename", "rindex", "select", "signal",
    "sleep", "srand", "stat", "strcmp", "strcpy", "strlen", "sync", "system", "time", "unlink",
    "wait", "write", "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or",
    "or_eq", "xor", "xor_eq", "auto", "bool", "break", "case", "char", "const", "continue",
    "default", "delete", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "int", "long", "new", "operator", "register", "return", "short", "signed", "sizeof",
    "static", "struct", "switch", "template", "this", "typedef", "union", "unsigned", "void",
    "volatile", "while", "main",
})


def _bits(mem: SSAValue, n: int) -> int:
    """Bits of one vector access of `n` elements of `mem` (kc_ld128 / 64 / 32)."""
    return 8 * n * kernel.element_bytes(mem.type.element_type)


def _fail(op: Operation, what: str) -> ConversionError:
    """`kernel-to-cuda: no C translation for 'math.ctpop' in @k at loc(...)`"""
    p = op if isinstance(op, kernel.FuncOp) else op.parent_op()
    while p is not None and not isinstance(p, kernel.FuncOp):
        p = p.parent_op()
    where = "" if p is None else f" in @{p.sym_name.data}"
    loc = "" if isinstance(op.location, UnknownLoc) else f" at {op.location}"
    return ConversionError(f"kernel-to-cuda: {what} '{op.name}'{where}{loc}")


def _int_data(t: Attribute) -> bool:
    """int32/int64 data, whose arithmetic follows aten's (wrapping, division by -1); an index
    is IndexType at this level (i32 in C) and keeps plain C arithmetic."""
    return isinstance(t, IntegerType) and t.width.data >= 32


class _Translator:
    """Builds one cuda.kernel from one kernel.func, op by op, with a map old value -> new value."""

    def __init__(self, func: kernel.FuncOp):
        self.func = func
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.block: Block | None = None
        self.written = {op.memref for op in func.walk()
                        if isinstance(op, memref.StoreOp | kernel.VectorStoreOp)}
        # the next free byte of dynamic shared memory, None where the buffers are static
        self.dynamic = 0 if func.dynamic_shared_bytes() else None
        self.first_block: dict[kernel.PartOp, int] = {}  # a fused kernel's part -> its first block
        for p in func.parts():
            self.first_block[p] = sum(q.blocks for q in self.first_block)

    def run(self) -> cuda.KernelOp:
        params = [self.param_type(a) for a in self.func.args]
        bx, by, bz = self.func.block_dims
        k = cuda.KernelOp(self.func.sym_name.data, params, bx * by * bz)
        origin.set_kernel(k, origin.of_op(self.func))
        self.bind(self.func.args, k.params)
        self.translate(self.func.body.block, k.body.block)
        return k

    # --- helpers -------------------------------------------------------------------------
    def param_type(self, a: SSAValue) -> Attribute:
        if isinstance(a.type, MemRefType):
            return cuda.PtrType(self.ctype(a.type.element_type), a not in self.written, True)
        return self.ctype(a.type)

    def ctype(self, t: Attribute, op: Operation | None = None) -> Attribute:
        t = i32 if isinstance(t, IndexType) else t
        if t not in cuda.C_SCALARS:
            raise _fail(op or self.func, f"no C type for {t} in")
        return t

    def emit(self, op: Operation) -> SSAValue | None:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def bind(self, olds, news) -> None:
        for o, n in zip(olds, news, strict=True):
            self.vmap[o] = n
            if o.name_hint and not n.name_hint:
                n.name_hint = o.name_hint

    def v(self, old: SSAValue) -> SSAValue:
        return self.vmap[old]

    def const(self, n: int, t: Attribute = i32) -> SSAValue:
        return self.emit(cuda.ConstantOp(IntegerAttr(n, t)))

    def cast(self, v: SSAValue, t: Attribute) -> SSAValue:
        if v.type == t:
            return v
        if isinstance(c := v.owner, cuda.ConstantOp) and isinstance(t, IntegerType) \
                and isinstance(c.value, IntegerAttr) and c.value.value.data >= 0:
            return self.const(c.value.value.data, t)  # 32u rather than (unsigned int)32
        return self.emit(cuda.CastOp(v, t))

    def translate(self, old: Block, new: Block) -> None:
        saved, self.block = self.block, new
        for op in old.ops:
            self.op(op)
        self.block = saved

    def linear(self, mem: SSAValue, indices) -> SSAValue:
        """Row-major linear index of `mem[indices]` from the static shape, constants folded."""
        shape = mem.type.get_shape()
        strides = [pymath.prod(shape[i + 1:]) for i in range(len(shape))]
        offset, terms = 0, []
        for idx, stride in zip(indices, strides):
            if isinstance(c := idx.owner, arith.ConstantOp):
                offset += c.value.value.data * stride
                continue
            term = self.v(idx)
            if stride != 1:
                term = self.emit(cuda.BinaryOp("mul", term, self.const(stride)))
            terms.append(term)
        if offset or not terms:
            terms.append(self.const(offset))
        acc = terms[0]
        for t in terms[1:]:
            acc = self.emit(cuda.BinaryOp("add", acc, t))
        return acc

    # --- one op --------------------------------------------------------------------------
    def op(self, op: Operation) -> None:
        if op.name in C_OPS:
            return self.bind(op.results, [self.scalar(op, *C_OPS[op.name])])
        if op.name in CASTS:
            dst = self.ctype(op.results[0].type, op)
            src = self.v(op.operands[0])
            if op.name in ("arith.uitofp", "arith.extui"):
                src = self.unsigned(src)
            if op.name == "arith.fptoui":
                via = UNSIGNED[dst.width.data]
                return self.bind(op.results, [self.cast(self.cast(self.f32(src), via), dst)])
            via_float = (src.type in HALF or dst in HALF) and F32 not in (src.type, dst)
            return self.bind(op.results, [self.cast(self.cast(src, F32) if via_float else src, dst)])
        if isinstance(op, kernel.BlockIdOp | kernel.GridDimOp) and (
                part := kernel.enclosing_part(op)) is not None:
            return self.bind(op.results, [self.part_id(op, part)])
        if type(op) in SPECIAL:
            reg = f"{SPECIAL[type(op)]}.{op.dimension.data.value}"
            return self.bind(op.results, [self.emit(cuda.SpecialOp(reg))])
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is None:
            raise _fail(op, "no C translation for")
        handler(op)

    def part_id(self, op: kernel.BlockIdOp | kernel.GridDimOp, part: kernel.PartOp) -> SSAValue:
        """A part's own block id (from the fused blockIdx.x, x fastest) or grid size."""
        axis = "xyz".index(op.dimension.data.value)
        gx, gy, gz = part.grid_dims
        if isinstance(op, kernel.GridDimOp) or part.grid_dims[axis] == 1:
            return self.const(part.grid_dims[axis] if isinstance(op, kernel.GridDimOp) else 0)
        b = self.emit(cuda.SpecialOp("blockIdx.x"))
        if self.first_block[part]:
            b = self.emit(cuda.BinaryOp("sub", b, self.const(self.first_block[part])))
        if axis and (below := gx if axis == 1 else gx * gy) > 1:
            b = self.emit(cuda.BinaryOp("div", b, self.const(below)))
        if axis < 2 and part.grid_dims[axis] < (gx * gy * gz if axis == 0 else gy * gz):
            b = self.emit(cuda.BinaryOp("rem", b, self.const(part.grid_dims[axis])))
        return b

    def f32(self, v: SSAValue) -> SSAValue:
        return self.cast(v, F32) if v.type in HALF else v

    def unsigned(self, v: SSAValue) -> SSAValue:
        """The same bits as an unsigned C type of its width (bool stays bool): C promotes an
        unsigned char / short to a non-negative int, so division, shifts, compares and widening
        read the bits as unsigned."""
        w = v.type.width.data
        return self.cast(v, UNSIGNED[w]) if w in UNSIGNED else v

    def scalar(self, op: Operation, form: str, name: str) -> SSAValue:
        args = [self.f32(self.v(a)) for a in op.operands]
        out = self.ctype(op.results[0].type, op)
        data = _int_data(op.results[0].type)
        if name in ("add", "sub", "mul") and data:
            # int32/int64 data wraps, as aten's: signed overflow is undefined in C, and a
            # compiler folds (x + 1) < 0 to x < -1 (index arithmetic keeps its signed form)
            form = "ubinary"
        if form == "binary" and name in ("div", "rem") and data:
            r = self.int_divide(name, *args)
        elif form == "binary":
            r = self.emit(cuda.BinaryOp(name, *args))
        elif form == "ubinary":
            r = self.emit(cuda.BinaryOp(name, *(self.unsigned(a) for a in args)))
        elif form == "unary":
            r = self.emit(cuda.UnaryOp(name, args[0]))
        elif form in ("minmax", "uminmax"):
            cmp = [self.unsigned(a) for a in args] if form == "uminmax" else args
            r = self.emit(cuda.SelectOp(self.emit(cuda.CompareOp(name, *cmp)), *args))
        elif form == "nanminmax":  # a if a > b or a is NaN, else b (NaN when b is)
            a, b = args
            keep = cuda.BinaryOp("or", self.emit(cuda.CompareOp(name, a, b)),
                                 self.emit(cuda.CompareOp("ne", a, a)))
            r = self.emit(cuda.SelectOp(self.emit(keep), a, b))
        else:  # call
            fn = name if args[0].type != F32 else name + "f"
            r = self.emit(cuda.CallOp(fn, args, args[0].type))
        return self.cast(r, out)

    def int_divide(self, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """int32/int64 data `a / b` or `a % b` as aten's: the least value over -1 is itself
        (-x wrapping) and its remainder 0, where C's division traps (SIGFPE on x86): the
        divisor -1 is taken as 1, the quotient negated in unsigned arithmetic."""
        minus_one = self.emit(cuda.CompareOp("eq", b, self.const(-1, b.type)))
        safe = self.emit(cuda.SelectOp(minus_one, self.const(1, b.type), b))
        r = self.emit(cuda.BinaryOp(name, a, safe))
        if name == "rem":
            return r
        negated = self.emit(cuda.BinaryOp("sub", self.const(0, UNSIGNED[a.type.width.data]),
                                          self.unsigned(a)))
        return self.emit(cuda.SelectOp(minus_one, self.cast(negated, a.type), r))

    def op_arith_constant(self, op: arith.ConstantOp) -> None:
        val, t = op.value, self.ctype(op.result.type, op)
        if isinstance(val, IntegerAttr):
            n = val.value.data
            if t == i32 and not -(2**31) <= n < 2**31:
                raise _fail(op, f"constant {n} out of int range in")
            attr = IntegerAttr(n, t)
        elif isinstance(val, FloatAttr):
            attr = val
        else:
            raise _fail(op, "no C translation for a non-scalar")
        self.bind(op.results, [self.emit(cuda.ConstantOp(attr))])

    def op_arith_cmpi(self, op: arith.CmpiOp) -> None:
        kind, unsigned = CMPI[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]]
        a, b = self.v(op.lhs), self.v(op.rhs)
        if unsigned:
            a, b = self.unsigned(a), self.unsigned(b)
        self.bind(op.results, [self.emit(cuda.CompareOp(kind, a, b))])

    def op_arith_cmpf(self, op: arith.CmpfOp) -> None:
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if pred not in CMPF:
            raise _fail(op, f"no C translation for predicate '{pred}' of")
        kind, negate = CMPF[pred]
        r = self.emit(cuda.CompareOp(kind, self.f32(self.v(op.lhs)), self.f32(self.v(op.rhs))))
        self.bind(op.results, [self.emit(cuda.UnaryOp("not", r)) if negate else r])

    def op_arith_select(self, op: arith.SelectOp) -> None:
        c, a, b = (self.v(x) for x in op.operands)
        self.bind(op.results, [self.emit(cuda.SelectOp(c, a, b))])

    def _divmod(self, op: Operation, ceil: bool) -> None:
        """floordivsi / ceildivsi: C `/` truncates; step one towards -inf / +inf if inexact."""
        a, b = self.v(op.lhs), self.v(op.rhs)
        if _int_data(op.lhs.type):
            q, r = self.int_divide("div", a, b), self.int_divide("rem", a, b)
        else:
            q = self.emit(cuda.BinaryOp("div", a, b))
            r = self.emit(cuda.BinaryOp("rem", a, b))
        zero = self.const(0, a.type)
        inexact = self.emit(cuda.CompareOp("ne", r, zero))
        sr = self.emit(cuda.CompareOp("lt", r, zero))
        sb = self.emit(cuda.CompareOp("lt", b, zero))
        same = self.emit(cuda.CompareOp("eq" if ceil else "ne", sr, sb))
        adj = self.emit(cuda.BinaryOp("and", inexact, same))
        q2 = self.emit(cuda.BinaryOp("add" if ceil else "sub", q, self.const(1, a.type)))
        self.bind(op.results, [self.emit(cuda.SelectOp(adj, q2, q))])

    def op_arith_floordivsi(self, op: Operation) -> None:
        self._divmod(op, ceil=False)

    def op_arith_ceildivsi(self, op: Operation) -> None:
        self._divmod(op, ceil=True)

    def op_memref_load(self, op: memref.LoadOp) -> None:
        lin = self.linear(op.memref, op.indices)
        self.bind(op.results, [self.emit(cuda.LoadOp(self.v(op.memref), lin))])

    def op_memref_store(self, op: memref.StoreOp) -> None:
        lin = self.linear(op.memref, op.indices)
        self.emit(cuda.StoreOp(self.v(op.value), self.v(op.memref), lin))

    def op_scf_for(self, op: scf.ForOp) -> None:
        inits = [self.v(a) for a in op.iter_args]
        lb, ub, step = (self.v(x) for x in (op.lb, op.ub, op.step))
        body = Block(arg_types=[lb.type, *(x.type for x in inits)])
        new = cuda.ForOp(lb, ub, step, inits, Region(body))
        if "unroll" in op.attributes:
            new.attributes["unroll"] = op.attributes["unroll"]
        self.emit(new)
        self.bind(op.body.block.args, body.args)
        self.translate(op.body.block, body)
        self.bind(op.results, new.results)

    def op_scf_if(self, op: scf.IfOp) -> None:
        types = [self.ctype(r.type, op) for r in op.results]
        regions = []
        for old in (op.true_region, op.false_region):
            if old.blocks:
                regions.append(Region(Block()))
                self.translate(old.block, regions[-1].block)
        new = cuda.IfOp(self.v(op.cond), types, *regions)
        self.emit(new)
        self.bind(op.results, new.results)

    def op_kernel_part(self, op: kernel.PartOp) -> None:
        """`if (first <= blockIdx.x && blockIdx.x < first + n) { part }`; its shared buffers
        from dynamic offset 0 (the parts overlay)."""
        first, n = self.first_block[op], op.blocks
        b = self.emit(cuda.SpecialOp("blockIdx.x"))
        cond = self.emit(cuda.CompareOp("lt", b, self.const(first + n)))
        if first:
            low = self.emit(cuda.CompareOp("ge", b, self.const(first)))
            cond = self.emit(cuda.BinaryOp("and", low, cond))
        body = Region(Block())
        self.dynamic = 0 if self.dynamic is not None else None
        self.translate(op.body.block, body.block)
        body.block.add_op(cuda.YieldOp())
        self.emit(cuda.IfOp(cond, [], body))

    def op_scf_yield(self, op: scf.YieldOp) -> None:
        self.emit(cuda.YieldOp(*(self.v(a) for a in op.arguments)))

    def op_kernel_shared(self, op: kernel.SharedOp) -> None:
        """A static `__shared__` array, or (kernel.FuncOp.dynamic_shared_bytes) a part of the
        launch's dynamic shared memory, each at the next 16-byte boundary."""
        t = op.result.type
        arr = cuda.ArrayType(max(1, pymath.prod(t.get_shape())), self.ctype(t.element_type, op))
        offset = self.dynamic
        if offset is not None:
            self.dynamic += dynamic_part_bytes(op)
        self.bind(op.results, [self.emit(cuda.SharedOp(arr, offset))])

    def op_memref_alloca(self, op: memref.AllocaOp) -> None:
        """A thread's own array (a `loop.private` buffer): `float acc[64];`"""
        t = op.memref.type
        arr = cuda.ArrayType(max(1, pymath.prod(t.get_shape())), self.ctype(t.element_type, op))
        self.bind(op.results, [self.emit(cuda.LocalOp(arr))])

    def op_kernel_barrier(self, op: kernel.BarrierOp) -> None:
        self.emit(cuda.SyncThreadsOp())

    def op_kernel_shuffle(self, op: kernel.ShuffleOp) -> None:
        """Half values travel through a float shuffle."""
        v = self.v(op.value)
        mask = None if op.mask is None else op.mask.value.data
        r = self.emit(cuda.ShflOp(op.mode.data.value, self.f32(v), self.const(op.offset.value.data),
                                  op.width.value.data, mask))
        self.bind(op.results, [self.cast(r, v.type)])

    def op_kernel_cp_async(self, op: kernel.CpAsyncOp) -> None:
        dst = self.emit(cuda.AddressOp(self.v(op.dst), self.linear(op.dst, op.dst_indices)))
        src = self.emit(cuda.AddressOp(self.v(op.src), self.linear(op.src, op.src_indices)))
        self.emit(cuda.CallOp(f"kc_cp_async{op.bytes.value.data}", [dst, src]))

    def _vector_regs(self, op: Operation, t: MemRefType, n: int) -> SSAValue:
        arr = self.emit(cuda.LocalOp(cuda.ArrayType(n, self.ctype(t.element_type, op))))
        arr.name_hint = "vec"
        return arr

    def op_kernel_vector_load(self, op: kernel.VectorLoadOp) -> None:
        """`float vec[4]; kc_ld128(&vec[0], &x[i]);` then the results are `vec[0..3]`
        (kc_ld64 / kc_ld32 for 8 and 4 bytes)."""
        regs = self._vector_regs(op, op.memref.type, len(op.res))
        src = self.emit(cuda.AddressOp(self.v(op.memref), self.linear(op.memref, op.indices)))
        self.emit(cuda.CallOp(f"kc_ld{_bits(op.memref, len(op.res))}",
                              [self.emit(cuda.AddressOp(regs, self.const(0))), src]))
        self.bind(op.res, [self.emit(cuda.LoadOp(regs, self.const(k))) for k in range(len(op.res))])

    def op_kernel_vector_store(self, op: kernel.VectorStoreOp) -> None:
        """`float vec[4]; vec[0] = a; ...; kc_st128(&y[i], &vec[0]);` (kc_st64 / kc_st32)."""
        regs = self._vector_regs(op, op.memref.type, len(op.values))
        for k, v in enumerate(op.values):
            self.emit(cuda.StoreOp(self.v(v), regs, self.const(k)))
        dst = self.emit(cuda.AddressOp(self.v(op.memref), self.linear(op.memref, op.indices)))
        self.emit(cuda.CallOp(f"kc_st{_bits(op.memref, len(op.values))}",
                              [dst, self.emit(cuda.AddressOp(regs, self.const(0)))]))

    def _regs(self, values, t: Attribute, n: int, hint: str) -> SSAValue:
        """A local array of n `t`, filled with `values` (when given)."""
        arr = self.emit(cuda.LocalOp(cuda.ArrayType(n, self.ctype(t))))
        arr.name_hint = hint
        for k, v in enumerate(values):
            self.emit(cuda.StoreOp(self.v(v), arr, self.const(k)))
        return arr

    def _address0(self, arr: SSAValue) -> SSAValue:
        return self.emit(cuda.AddressOp(arr, self.const(0)))

    def op_kernel_ldmatrix(self, op: kernel.LdmatrixOp) -> None:
        """`int frag[4]; kc_ldmatrix_x4(&frag[0], &xs[i]);` then `frag[0..3]`."""
        n = len(op.res)
        regs = self._regs([], i32, n, "frag")
        row = self.emit(cuda.AddressOp(self.v(op.memref), self.linear(op.memref, op.indices)))
        fn = f"kc_ldmatrix_x{n}" + ("_trans" if op.trans is not None else "")
        self.emit(cuda.CallOp(fn, [self._address0(regs), row]))
        self.bind(op.res, [self.emit(cuda.LoadOp(regs, self.const(k))) for k in range(n)])

    def op_kernel_mma(self, op: kernel.MmaOp) -> None:
        """`kc_mma_16816_f16(&d[0], &a[0], &b[0], &c[0]);` on local arrays of the operands."""
        args = list(op.args)
        a = self._regs(args[:4], i32, 4, "fa")
        b = self._regs(args[4:6], i32, 2, "fb")
        c = self._regs(args[6:], F32, 4, "fc")
        d = self._regs([], F32, 4, "fd")
        fn = "kc_mma_16816_" + ("f16" if op.type == HALF[0] else "bf16")
        self.emit(cuda.CallOp(fn, [self._address0(x) for x in (d, a, b, c)]))
        self.bind(op.res, [self.emit(cuda.LoadOp(d, self.const(k))) for k in range(4)])

    def op_kernel_pack_halves(self, op: kernel.PackHalvesOp) -> None:
        self.bind(op.results, [self.emit(cuda.CallOp("kc_pack_halves",
                                                     [self.v(op.lo), self.v(op.hi)], i32))])

    def op_kernel_cp_async_commit(self, op: Operation) -> None:
        self.emit(cuda.CallOp("kc_cp_async_commit", []))

    def op_kernel_cp_async_wait(self, op: kernel.CpAsyncWaitOp) -> None:
        self.emit(cuda.CallOp("kc_cp_async_wait", [self.const(op.pending.value.data)]))

    def op_kernel_arrive_last(self, op: kernel.ArriveLastOp) -> None:
        r = self.emit(cuda.CallOp("kc_arrive_last", [self.v(op.slot),
                                                     self.const(op.count.value.data)], i1))
        self.bind(op.results, [r])


class LowerKernelFunc(RewritePattern):
    """kernel.func @k(...) grid(..) block(b) { ... } -> cuda.kernel @k(...) launch_bounds(b) { ... }"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.FuncOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, _Translator(op).run())


@dataclass
class LowerLaunch(RewritePattern):
    """kernel.launch @k(%a) : T -> cuda.launch @k(%a) grid(..) block(..) smem(N) : T"""

    dims: dict[str, tuple[tuple[int, ...], tuple[int, ...], int]]  # grid, block, smem

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: kernel.LaunchOp, rewriter: PatternRewriter) -> None:
        grid, block, smem = self.dims[op.callee.string_value()]
        rewriter.replace(op, cuda.LaunchOp(op.callee.string_value(), op.args, grid, block, smem))


def c_names(module: ModuleOp) -> dict[str, str]:
    """Kernel IR name -> its name in the `.cu`, for the kernels renamed there: @pow -> pow_k, a
    name the C headers do not declare (ptxas reports and launches use the C name)."""
    funcs = [k.sym_name.data for k in module.walk() if isinstance(k, kernel.FuncOp)]
    taken = set(funcs) | C_TAKEN
    rename: dict[str, str] = {}
    for name in funcs:
        if name in C_TAKEN or name.startswith(("kc_", "kcpu_", "__")):
            new, i = f"{name.lstrip('_')}_k", 1
            while new in taken:
                new, i = f"{name.lstrip('_')}_k{i}", i + 1
            taken.add(new)
            rename[name] = new
    return rename


def _c_safe_names(module: ModuleOp) -> None:
    """kernel.func @pow -> @pow_k (and its launches), as `c_names`."""
    rename = c_names(module)
    for k in module.walk():
        if isinstance(k, kernel.FuncOp) and k.sym_name.data in rename:
            k.sym_name = StringAttr(rename[k.sym_name.data])
    for la in module.walk():
        if isinstance(la, kernel.LaunchOp) and la.callee.string_value() in rename:
            la.callee = SymbolRefAttr(rename[la.callee.string_value()])


@dataclass(frozen=True)
class KernelToCudaPass(ModulePass):
    """Lower every kernel.func and kernel.launch to the cuda dialect."""

    name = "kernel-to-cuda"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _c_safe_names(op)
        dims = {k.sym_name.data: (k.grid_dims, k.block_dims, k.dynamic_shared_bytes())
                for k in op.walk() if isinstance(k, kernel.FuncOp)}
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerKernelFunc(), LowerLaunch(dims)], dce_enabled=False),
            apply_recursively=False).rewrite_module(op)
        check_converted(op, "kernel", self.name)
