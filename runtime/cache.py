"""One on-disk cache root for compiled artifacts (CPU .so files, cubins, PCH).

Why: compiling a kernel with g++ costs ~0.3-2 s and NVRTC ~50-250 ms; keyed by the sha256 of
the source (plus flags), a rerun of the test suite or of `deplo run` pays it once.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """The folder for one kind of artifact, e.g. cache_dir("cpu"); `$DEPLO_CACHE_DIR` overrides
    the default `~/.cache/deplo`."""
    root = Path(os.environ.get("DEPLO_CACHE_DIR") or Path.home() / ".cache" / "deplo")
    path = root / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_key(*parts: str | bytes) -> str:
    """sha256 over every part that changes the artifact (source text, flags, tool versions)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()
