"""lit configuration: every .mlir under test/lit is a FileCheck test of deplo-opt."""

import os
import shutil
import sys

import lit.formats

config.name = "deplo"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(
    os.environ.get("DEPLO_LIT_OUT", os.path.join(os.path.dirname(__file__), "..", "..", "build")),
    "lit",
)

bindir = os.path.dirname(sys.executable)
config.environment["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
# no tuning store changes what a lit test compiles (test/conftest.py does the same for pytest)
config.environment["DEPLO_TUNING_DB"] = os.path.join(config.test_exec_root, "no-store.sqlite")
for key in ("HOME", "DEPLO_CACHE_DIR", "PYTHONPATH"):
    if key in os.environ:
        config.environment[key] = os.environ[key]
for tool in ("deplo-opt", "filecheck"):
    if shutil.which(tool, path=config.environment["PATH"]) is None:
        lit_config.fatal(f"{tool} not found next to {sys.executable}: run `pip install -e .[test]`")
config.substitutions.append(("%roundtrip", "deplo-opt %s | deplo-opt"))
