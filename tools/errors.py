"""User errors end in one clear message and exit status 1, never a traceback.

The list is explicit: anything else is a bug in deplo and keeps its traceback so it can be fixed.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from deplo import origin


class UsageError(Exception):
    """A command line that cannot run: a path that cannot be read or written, a bad value."""


def user_error_types() -> tuple[type[BaseException], ...]:
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    from deplo.frontend.errors import FrontendError
    from deplo.runtime.cache import CacheDirError
    from deplo.runtime.cpu import CpuCompileError, KernelError
    from deplo.runtime.gpu import CudaCompileError, NoGpuError
    from deplo.tuning.store import StoreError

    return (UsageError, FrontendError, DiagnosticException, ParseError, VerifyException, CpuCompileError,
            KernelError, CudaCompileError, NoGpuError, StoreError, CacheDirError)


@contextmanager
def writing(path: str):
    """An OSError while writing `path` (a full disk, no permission) is a UsageError."""
    try:
        yield
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


@dataclass
class Status:
    code: int = 0


@contextmanager
def user_errors(tool: str, types: tuple[type[BaseException], ...] | None = None):
    """Report `types` (default: every user error, which imports the runtimes) as one message
    and status 1."""
    status = Status()
    caught = types if types is not None else user_error_types()
    try:
        yield status
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (the exit's flush)
        status.code = 1
    except KeyboardInterrupt as e:  # Ctrl-C: what it stopped, not where Python was
        print(f"{tool}: interrupted", file=sys.stderr)
        for note in getattr(e, "__notes__", []):
            print(note, file=sys.stderr)
        status.code = 130
    except caught as e:
        from xdsl.utils.exceptions import VerifyException

        # the op it is about, not the module xDSL prints as a note (a verifier's or a pattern's)
        notes = getattr(e, "__notes__", [])
        dumped = isinstance(e, VerifyException) or any(map(origin.is_module_dump, notes))
        print(f"{tool}: error: {e}{origin.marked_op(e) if dumped else ''}", file=sys.stderr)
        for note in notes:
            if not origin.is_module_dump(note):
                print(note, file=sys.stderr)
        status.code = 1
