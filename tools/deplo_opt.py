"""`deplo-opt`: the MLIR-style driver on textual IR.

    deplo-opt FILE -p to-loop                      # a named pipeline
    deplo-opt FILE --pass-pipeline='builtin.module(tile-map-threads{threads=128})'
    deplo-opt FILE -p to-cuda -t cuda              # print the .cu
    deplo-opt FILE -p to-tile --print-ir-after-all

It is xDSL's `xDSLOptMain` loading only deplo's dialects and the standard ones they use, plus
MLIR's `--pass-pipeline` spelling, named pipelines, `--print-ir-after-all`, and user errors as
diagnostics (exit 1) rather than tracebacks.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.dialects.builtin import ModuleOp, ShapedType
from xdsl.ir import Operation, SSAValue
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Input, Span
from xdsl.xdsl_opt_main import xDSLOptMain

from deplo.dialects.tir import ELEMENT_TYPES
from deplo.passes import pipeline
from deplo.tools.errors import UsageError, user_errors, writing

STANDARD_DIALECTS = {
    "builtin": lambda: builtin.Builtin,
    "func": lambda: func.Func,
    "arith": lambda: arith.Arith,
    "math": lambda: math.Math,
    "scf": lambda: scf.Scf,
    "memref": lambda: memref.MemRef,
}

MAX_NESTING = 64
"""Brackets nest at most this deep (real IR: ~12); xDSL's parser overflows Python's stack ~150."""

# Comments, complete strings, a lone quote (a string that does not end on its line, or a bad
# escape), `->`, brackets. Each alternative matches one way, so the scan is linear.
_SCAN = re.compile(r'//[^\n]*|"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"|"|->|[(\[{<)\]}>]')


def _located(text: str, name: str, pos: int, msg: str, line_offset: int = 0) -> ParseError:
    return ParseError(Span(pos, pos + 1, Input(text, name), line_offset), msg)


def read_source(data: bytes, name: str) -> str:
    """The input as text, or a located ParseError where xDSL 0.74 fails badly: invalid UTF-8
    (an error without a location), a string that does not end on its line (its lexer
    backtracks exponentially: 28 characters take 16 s), nesting past MAX_NESTING (a
    RecursionError)."""
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        pos = len(data[: e.start].decode())
        raise _located(data.decode(errors="replace"), name, pos,
                       f"invalid UTF-8 (byte 0x{data[e.start]:02x})") from None
    depth = 0
    for m in _SCAN.finditer(text):
        tok = m.group()
        if tok == '"':
            raise _located(text, name, m.start(), "string literal not closed on its line (or an "
                           'escape other than \\n \\t \\\\ \\" \\XX)')
        if tok in ("(", "[", "{", "<"):
            depth += 1
            if depth > MAX_NESTING:
                raise _located(text, name, m.start(), f"nested deeper than {MAX_NESTING} levels")
        elif tok in (")", "]", "}", ">"):
            depth = max(depth - 1, 0)
    return text


class LocatingParser(Parser):
    """xDSL's parser, remembering where each op starts (xDSL keeps no source positions)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.starts: dict[Operation, int] = {}
        self.open: list[int] = []  # the ops being parsed, outermost first
        self.first_use: dict[str, Span] = {}

    def parse_operation(self) -> Operation:
        self.open.append(self._current_token.span.start)
        op = super().parse_operation()
        self.starts[op] = self.open.pop()
        return op

    def resolve_operand(self, operand, type):
        if operand.operand_name not in self.ssa_values:  # a forward reference: where it is
            self.first_use.setdefault(operand.operand_name, operand.span)  # used first
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's, with a value never defined reported where it is first used (not at the end
        of the file)."""
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as e:
            unresolved = [n for n in self.forward_ssa_references if n in self.first_use]
            if "used but not defined" not in str(e) or not unresolved:
                raise
            raise ParseError(self.first_use[unresolved[0]],
                             f"%{unresolved[0]} is used but never defined") from None

    def failed_at(self, line_offset: int = 0) -> Span:
        """Where the op being parsed starts (xDSL refused a literal in it)."""
        pos = self.open[-1] if self.open else self._current_token.span.start
        return Span(pos, pos + 1, self.lexer.input, line_offset)


def verify_located(module: Operation, starts: dict[Operation, int], source: Input,
                   line_offset: int = 0) -> None:
    """Verify `module` as xDSL does, but report the failing op at its file:line:col; and
    reject what xDSL's verifier accepts but no pass can take: a value used before its
    definition, a function without a body, a region of several blocks, an element type no level
    takes (f80)."""

    def fail(op: Operation, msg: str):
        at = op
        while at not in starts and at.parent_op() is not None:
            at = at.parent_op()
        pos = starts.get(at, 0)
        raise VerifyException(Span(pos, pos + 1, source, line_offset).print_with_context(msg))

    defined: set[SSAValue] = set()

    def check_uses(op: Operation) -> None:
        for i, v in enumerate(op.operands):
            if v not in defined:
                fail(op, f"{op.name}: operand {i} (%{v.name_hint or '?'}) is used before its "
                         "definition")
        if isinstance(op, func.FuncOp) and not op.body.blocks:
            fail(op, f"func.func @{op.sym_name.data}: expected a body (deplo takes no declarations)")
        for region in op.regions:
            if len(region.blocks) > 1:
                fail(op, f"{op.name}: expected regions of one block, got {len(region.blocks)}")
            for block in region.blocks:
                scope = list(block.args)
                defined.update(scope)
                for child in block.ops:
                    check_uses(child)
                    defined.update(child.results)
                    scope += child.results
                defined.difference_update(scope)

    check_uses(module)
    try:
        _verify(module)
    except VerifyException:
        for op in module.walk(region_first=True):  # innermost first, as verify() goes
            try:
                _verify(op)
            except VerifyException as e:
                fail(op, str(e))
        raise
    for op in module.walk():  # what the ops' verifiers let through (f80), their messages first
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            elt = getattr(v.type, "element_type", None)
            if isinstance(v.type, ShapedType) and str(elt) not in ELEMENT_TYPES:
                fail(op, f"{op.name}: element type {elt} of {v.type} is not one deplo takes "
                         f"({', '.join(ELEMENT_TYPES)})")
            if isinstance(v.type, ShapedType) and len(v.type.get_shape()) > MAX_NESTING:
                fail(op, f"{op.name}: {len(v.type.get_shape())} dims; deplo takes at most "
                         f"{MAX_NESTING}, as PyTorch (each is a loop of the nest)")
            if isinstance(op, func.FuncOp) and isinstance(v.type, ShapedType) \
                    and prod(v.type.get_shape()) >= 2**31:  # (an input is a buffer; a value
                fail(op, f"{op.name}: input {v.type} has 2^31 elements or more (the kernels "
                         "index with CUDA C's int)")  # inside may be a broadcast never stored)
            if isinstance(v.type, ShapedType) and any(n < 0 for n in v.type.get_shape()):
                fail(op, f"{op.name}: {v.type} has a dynamic dim (deplo compiles static "
                         "shapes)")


def _verify(op: Operation) -> None:
    """op.verify(), with the bare `Exception` a few xDSL 0.74 verifiers raise (memref.load and
    store with too few indices, scf.for) as the VerifyException it means."""
    try:
        op.verify()
    except Exception as e:
        if type(e) is not Exception:
            raise
        raise VerifyException(str(e)) from None


class _Output:
    """`-o FILE`, whose write errors (a full disk, /dev/full) are user errors."""

    def __init__(self, path: str):
        self.path = path
        with writing(path):
            self.file = open(path, "w")  # noqa: SIM115 - closed by xDSL's run()

    def write(self, text: str) -> None:
        with writing(self.path):
            self.file.write(text)

    def flush(self) -> None:
        with writing(self.path):
            self.file.flush()

    def close(self) -> None:
        with writing(self.path):
            self.file.close()


class DeploOptMain(xDSLOptMain):
    version_format = "deplo-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        for name, get in {**STANDARD_DIALECTS, **pipeline.DIALECTS}.items():
            self.ctx.register_dialect(name, get)

    def register_all_passes(self):
        for name, get in pipeline.PASSES.items():
            self.register_pass(name, get)

    def register_all_targets(self):
        super().register_all_targets()
        # of xDSL's printers only mlir: the others (llvm, x86-asm, wgsl, ...) take dialects
        # deplo never emits, and failed with tracebacks or printed nothing
        self.available_targets = {"mlir": self.available_targets["mlir"], **pipeline.TARGETS}

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.allow_abbrev = False  # `--pass-pipe` is not `--pass-pipeline`
        arg_parser.add_argument(
            "--pass-pipeline",
            default=None,
            help="MLIR spelling of -p: 'builtin.module(pass-a{opt=1},pass-b)' or a named pipeline",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR after every pass to stderr, with an MLIR-style banner",
        )

    def setup_pipeline(self):
        """Check the pass spec now; the passes are chosen per input (`apply_passes`), where a
        named pipeline starts at the level the IR is at."""
        if self.args.pass_pipeline and self.args.passes:
            raise pipeline.PipelineError("give the passes once: -p or --pass-pipeline, not both")
        self.spec = self.args.pass_pipeline or self.args.passes or ""
        pipeline.parse_passes(self.spec)
        self.args.passes = ""
        super().setup_pipeline()
        inner = self.pipeline.callback
        verify, self.args.disable_verify = not self.args.disable_verify, True  # ours, not xDSL's

        def callback(prev, module, nxt):
            if verify:
                pipeline.verified(module, prev)
            inner(prev, module, nxt)  # xDSL's: --time-passes, --print-between-passes
            if prev is not None and self.args.print_ir_after_all:
                print(f"// -----// IR Dump After {prev.name} //----- //", file=sys.stderr)
                Printer(stream=sys.stderr).print_op(module)
                print(file=sys.stderr)

        self.callback = callback

    def apply_passes(self, prog):
        nested = sum(isinstance(op, ModuleOp) for op in prog.ops)
        if nested and pipeline.parse_passes(self.spec):
            raise pipeline.PipelineError(
                f"the input holds {nested} builtin.modules in one; the passes take one module "
                "(put `// -----` between them and pass --split-input-file)")
        passes = pipeline.plan(self.spec, pipeline.ir_level(prog))
        PassPipeline(passes, self.callback).apply(self.ctx, prog)

    def get_input_stream(self):
        """The input file whatever its extension (as mlir-opt), `-` or none for stdin;
        unreadable: a user error."""
        if self.args.input_file in (None, "-"):
            return sys.stdin.buffer, "mlir"
        try:
            with open(self.args.input_file, "rb") as f:
                data = f.read()
            return io.BytesIO(data.removeprefix(b"\xef\xbb\xbf")), "mlir"  # (an editor's BOM)
        except OSError as e:
            raise UsageError(f"cannot read {self.args.input_file}: {e.strerror}") from None

    def prepare_output(self):
        return sys.stdout if self.args.output_file is None else _Output(self.args.output_file)

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        name = self.get_input_name()
        text = read_source(chunk.read(), name)
        if not re.sub(r"//[^\n]*", "", text).strip():  # mlir-opt's answer to an empty file
            return ModuleOp([])
        parser = LocatingParser(self.ctx, text, name)
        try:
            module = parser.parse_module(not self.args.no_implicit_module)
        except VerifyException as e:  # an attribute's verifier refused it (--verify-diagnostics)
            raise VerifyException(parser.failed_at(start_offset).print_with_context(str(e))) from None
        except (ValueError, OverflowError, NotImplementedError) as e:  # xDSL refused a literal
            # (or an affine map it does not implement: d0 * s0)
            raise ParseError(parser.failed_at(), str(e)) from None
        verify_located(module, parser.starts, parser.lexer.input, start_offset)
        return module


def main(args: Sequence[str] | None = None) -> int:
    # only the IR's errors (and a bad pass spec or path): deplo-opt never loads the runtimes,
    # whose import would cost every lit RUN line ~0.2 s
    ir_errors = (ParseError, DiagnosticException, UsageError, ArgSpecParseError)
    with user_errors("deplo-opt", ir_errors) as status:
        DeploOptMain(description="deplo's MLIR-style optimizer driver", args=args).run()
    return status.code


if __name__ == "__main__":
    sys.exit(main())
