"""The tuning store: every plan evaluation `deplo tune` makes, in one SQLite file.

Why SQLite: an evaluation is committed the moment it finishes, so a tuner killed mid-run loses
at most the one in flight and the next run resumes from what is there; WAL mode lets a second
tuner (or `deplo run --db` reading the best plans) work on the same file at the same time.

A row is keyed by (kernel structural key, arch, plan) where plan is the canonical JSON of
{"kind", "knobs"}. Its status is `unverified` when stored, `verified` once the whole program
with the plan pinned matched PyTorch, `rejected` when it did not, `failed` when the plan did not
lower or run (no time). `best` is the fastest verified row, measured (`gpu`) rows before
predicted (`model`) ones.

    with TuningStore(default_path()) as store:
        store.record(key, "sm_90", "matmul", "matmul", knobs, 12.5, "model")
        store.best(key, "sm_90")          # Evaluation | None
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

DEFAULT_NAME = "tuning.sqlite"
def _deplo_version() -> str:
    try:
        return importlib.metadata.version("deplo")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


VERSION = _deplo_version()  # the deplo that made an evaluation
STATUSES = ("unverified", "verified", "rejected", "failed")
EVALUATOR_RANK = {"gpu": 0, "model": 1}  # measured beats predicted

_SCHEMA = """
CREATE TABLE IF NOT EXISTS evaluations (
    kernel_key TEXT NOT NULL, arch TEXT NOT NULL, plan TEXT NOT NULL, name TEXT NOT NULL,
    kind TEXT NOT NULL, time_us REAL, evaluator TEXT NOT NULL, status TEXT NOT NULL,
    created REAL NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (kernel_key, arch, plan, evaluator));
CREATE TABLE IF NOT EXISTS defaults (
    kernel_key TEXT NOT NULL, arch TEXT NOT NULL, name TEXT NOT NULL, plan_id TEXT NOT NULL,
    PRIMARY KEY (kernel_key, arch));
"""


class StoreError(Exception):
    """The store file cannot be used; str() is one line naming the file."""


def default_path() -> Path:
    """$DEPLO_TUNING_DB, else tuning/tuning.sqlite in the cache root ($DEPLO_CACHE_DIR or
    ~/.cache/deplo)."""
    if env := os.environ.get("DEPLO_TUNING_DB"):
        return Path(env)
    from deplo.runtime.cache import cache_dir

    return cache_dir("tuning") / DEFAULT_NAME


@dataclass(frozen=True)
class Evaluation:
    key: str
    arch: str
    name: str
    kind: str
    knobs: dict
    time_us: float | None
    evaluator: str
    status: str
    created: float
    version: str

    @property
    def plan(self) -> dict:
        return {"kind": self.kind, **self.knobs}


def _plan_text(kind: str, knobs: dict) -> str:
    return json.dumps({"kind": kind, "knobs": knobs}, sort_keys=True)


class TuningStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout = 30000")
            # two processes creating one store at once: SQLite reports the switch to WAL as
            # locked at once, without waiting on the busy timeout, so wait here
            for attempt in range(200):
                try:
                    self._db.execute("PRAGMA journal_mode = WAL")
                    self._db.executescript(_SCHEMA)
                    self._db.commit()
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or attempt == 199:
                        raise
                    time.sleep(0.05)
        except (sqlite3.DatabaseError, OSError) as e:
            raise StoreError(f"{self.path}: not a usable tuning store ({e})") from None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def _write(self, sql: str, args: tuple) -> None:
        try:
            with self._db:
                self._db.execute(sql, args)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: {e}") from None

    def _rows(self, where: str, args: tuple) -> list[Evaluation]:
        cur = self._db.execute(
            "SELECT kernel_key, arch, name, kind, plan, time_us, evaluator, status, created, "
            f"version FROM evaluations WHERE {where} ORDER BY created, rowid", args)
        return [Evaluation(k, a, n, kind, json.loads(p)["knobs"], t, ev, s, c, v)
                for k, a, n, kind, p, t, ev, s, c, v in cur.fetchall()]

    def record(self, key: str, arch: str, name: str, kind: str, knobs: dict,
               time_us: float | None, evaluator: str) -> Evaluation:
        """Store one evaluation (committed at once); an evaluation already there is kept."""
        status = "failed" if time_us is None else "unverified"
        self._write("INSERT OR IGNORE INTO evaluations VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (key, arch, _plan_text(kind, knobs), name, kind, time_us, evaluator, status,
                     time.time(), VERSION))
        return self.get(key, arch, kind, knobs, evaluator)  # type: ignore[return-value]

    def get(self, key: str, arch: str, kind: str, knobs: dict,
            evaluator: str | None = None) -> Evaluation | None:
        """One plan's evaluation (the measured one first where there are both)."""
        rows = self._rows("kernel_key = ? AND arch = ? AND plan = ?",
                          (key, arch, _plan_text(kind, knobs)))
        rows = [e for e in rows if evaluator in (None, e.evaluator)]
        return min(rows, key=lambda e: EVALUATOR_RANK.get(e.evaluator, 9), default=None)

    def evaluations(self, key: str, arch: str) -> list[Evaluation]:
        """A kernel's evaluations, oldest first."""
        return self._rows("kernel_key = ? AND arch = ?", (key, arch))

    def set_status(self, key: str, arch: str, kind: str, knobs: dict, status: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        self._write("UPDATE evaluations SET status = ? WHERE kernel_key = ? AND arch = ? "
                    "AND plan = ?", (status, key, arch, _plan_text(kind, knobs)))

    def best(self, key: str, arch: str) -> Evaluation | None:
        """The fastest verified plan; measured rows are preferred over predicted ones."""
        rows = [e for e in self.evaluations(key, arch)
                if e.status == "verified" and e.time_us is not None]
        if not rows:
            return None
        rank = min(EVALUATOR_RANK.get(e.evaluator, 9) for e in rows)
        rows = [e for e in rows if EVALUATOR_RANK.get(e.evaluator, 9) == rank]
        return min(rows, key=lambda e: e.time_us)

    def kernels(self, arch: str | None = None) -> list[str]:
        """Kernel keys with evaluations, in the order they were first stored."""
        sql = "SELECT kernel_key, MIN(rowid) FROM evaluations"
        args: tuple = ()
        if arch is not None:
            sql, args = sql + " WHERE arch = ?", (arch,)
        return [k for k, _ in self._db.execute(sql + " GROUP BY kernel_key ORDER BY 2", args)]

    def set_default(self, key: str, arch: str, name: str, plan_id: str) -> None:
        """Which plan the heuristic gives the kernel: the baseline of `deplo tune --report`."""
        self._write("INSERT OR REPLACE INTO defaults VALUES (?,?,?,?)", (key, arch, name, plan_id))

    def default(self, key: str, arch: str) -> tuple[str, str] | None:
        """(kernel name, plan id of the heuristic's plan) or None."""
        row = self._db.execute("SELECT name, plan_id FROM defaults WHERE kernel_key = ? AND "
                               "arch = ?", (key, arch)).fetchone()
        return (row[0], row[1]) if row else None
