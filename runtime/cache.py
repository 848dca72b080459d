"""One on-disk cache root for compiled artifacts (CPU .so files, cubins, PCH).

Why: compiling a kernel with g++ costs ~0.3-2 s and NVRTC ~50-250 ms; keyed by the sha256 of
the source (plus flags), a rerun of the test suite or of `deplo run` pays it once. An entry is
sealed with the sha256 of its files when built, and a hit is checked against it (`intact`): a
truncated or altered artifact (a full disk, a killed copy) is rebuilt instead of failing every
later run.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class CacheDirError(Exception):
    """The cache directory cannot be made (a file in its place, no permission)."""


def cache_dir(kind: str) -> Path:
    """The folder for one kind of artifact, e.g. cache_dir("cpu"); `$DEPLO_CACHE_DIR` overrides
    the default `~/.cache/deplo`."""
    root = Path(os.environ.get("DEPLO_CACHE_DIR") or Path.home() / ".cache" / "deplo")
    path = root / kind
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheDirError(f"cache directory {path} (DEPLO_CACHE_DIR): {e.strerror}") from None
    return path


def content_key(*parts: str | bytes) -> str:
    """sha256 over every part that changes the artifact (source text, flags, tool versions)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


_TRUSTED: set[Path] = set()  # digests checked in this process (the PCH is ~40 MB)


def _digest(files: list[Path]) -> str:
    return content_key(*(f.read_bytes() for f in files))


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """A new file beside `path`, then renamed over it: a reader (another process, a run cut
    short mid-write) sees the old whole file or the new one, never half of it."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def seal(files: list[Path], digest: Path) -> None:
    """Record the files' sha256 in `digest`; write it last: it marks a complete entry."""
    write_atomic(digest, _digest(files))


def intact(files: list[Path], digest: Path) -> bool:
    """The files exist and are what `seal` recorded."""
    if digest in _TRUSTED:
        return True
    try:
        ok = digest.read_text() == _digest(files)
    except OSError:
        return False
    if ok:
        _TRUSTED.add(digest)
    return ok
