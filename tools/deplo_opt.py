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
import sys
from collections.abc import Sequence

from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from deplo.passes import pipeline
from deplo.tools.errors import user_errors

STANDARD_DIALECTS = {
    "builtin": lambda: builtin.Builtin,
    "func": lambda: func.Func,
    "arith": lambda: arith.Arith,
    "math": lambda: math.Math,
    "scf": lambda: scf.Scf,
    "memref": lambda: memref.MemRef,
}


class DeploOptMain(xDSLOptMain):
    version_format = "deplo-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        for name, get in {**STANDARD_DIALECTS, **pipeline.DIALECTS}.items():
            self.ctx.register_dialect(name, get)

    def register_all_passes(self):
        for name, get in pipeline.PASSES.items():
            self.register_pass(name, get)

    def register_all_targets(self):
        super().register_all_targets()  # mlir, irdl, ... from xDSL
        self.available_targets.update(pipeline.TARGETS)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
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
        if self.args.pass_pipeline:
            self.args.passes = self.args.pass_pipeline
        self.args.passes = pipeline.expand_pipeline(self.args.passes or "")
        super().setup_pipeline()
        if self.args.print_ir_after_all:
            inner = self.pipeline.callback

            def callback(prev, module, nxt):
                if inner is not None:
                    inner(prev, module, nxt)
                if prev is not None:
                    print(f"// -----// IR Dump After {prev.name} //----- //", file=sys.stderr)
                    Printer(stream=sys.stderr).print_op(module)
                    print(file=sys.stderr)

            self.pipeline = PassPipeline(self.pipeline.passes, callback)


def main(args: Sequence[str] | None = None) -> int:
    # only the IR's errors (and a bad pass spec or path): deplo-opt never loads the runtimes,
    # whose import would cost every lit RUN line ~0.2 s
    ir_errors = (ParseError, DiagnosticException, VerifyException, ValueError, FileNotFoundError)
    with user_errors("deplo-opt", ir_errors) as status:
        DeploOptMain(description="deplo's MLIR-style optimizer driver", args=args).run()
    return status.code


if __name__ == "__main__":
    sys.exit(main())
