"""The tuning store: round trip, the best-plan rules, resume, a writer killed mid-run, two
writers at once, and a file that is not a store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from deplo.tuning.store import StoreError, TuningStore

K, ARCH = "key0", "sm_90"


def test_round_trip_and_order(tmp_path):
    with TuningStore(tmp_path / "sub" / "t.sqlite") as s:
        e = s.record(K, ARCH, "matmul", "matmul", {"mma": True, "k_chunk": 32}, 12.5, "model")
        assert (e.kind, e.knobs, e.time_us, e.status) == ("matmul", {"mma": True, "k_chunk": 32},
                                                          12.5, "unverified")
        s.record(K, ARCH, "matmul", "matmul", {"mma": False}, None, "model")
        s.record(K, ARCH, "matmul", "matmul", {"mma": True, "k_chunk": 32}, 99.0, "model")
        rows = s.evaluations(K, ARCH)
        assert [r.time_us for r in rows] == [12.5, None], "a stored evaluation is kept"
        assert rows[1].status == "failed"
        assert s.get(K, ARCH, "matmul", {"k_chunk": 32, "mma": True}).time_us == 12.5
        assert s.get(K, ARCH, "matmul", {"mma": 3}) is None
        assert s.kernels() == [K] and s.kernels("sm_80") == []


def test_best_is_the_fastest_verified_measured_first(tmp_path):
    with TuningStore(tmp_path / "t.sqlite") as s:
        assert s.best(K, ARCH) is None
        for i, (t, ev) in enumerate([(5.0, "model"), (3.0, "model"), (9.0, "gpu"), (7.0, "gpu")]):
            s.record(K, ARCH, "k", "pointwise", {"threads": 32 * (i + 1)}, t, ev)
        assert s.best(K, ARCH) is None, "unverified plans are never best"
        for i in range(4):
            s.set_status(K, ARCH, "pointwise", {"threads": 32 * (i + 1)}, "verified")
        assert s.best(K, ARCH).time_us == 7.0, "a measured time beats any predicted one"
        s.set_status(K, ARCH, "pointwise", {"threads": 128}, "rejected")
        s.set_status(K, ARCH, "pointwise", {"threads": 96}, "rejected")
        assert s.best(K, ARCH).time_us == 3.0
        with pytest.raises(ValueError):
            s.set_status(K, ARCH, "pointwise", {"threads": 32}, "great")
        s.set_default(K, ARCH, "k", '{"kind": "pointwise"}')
        assert s.default(K, ARCH) == ("k", '{"kind": "pointwise"}') and s.default("x", ARCH) is None


def test_resume_reads_what_an_earlier_run_wrote(tmp_path):
    path = tmp_path / "t.sqlite"
    with TuningStore(path) as s:
        s.record(K, ARCH, "k", "pointwise", {"threads": 64}, 2.0, "model")
    with TuningStore(path) as s:
        assert [e.knobs for e in s.evaluations(K, ARCH)] == [{"threads": 64}]


WRITER = textwrap.dedent("""
    import sys
    from deplo.tuning.store import TuningStore
    s = TuningStore(sys.argv[1])
    for i in range(int(sys.argv[3])):
        s.record(sys.argv[2], "sm_90", "k", "pointwise", {"threads": i}, float(i + 1), "model")
        print(i, flush=True)
    if sys.argv[4] == "hang":
        import time
        time.sleep(60)
""")


def test_a_killed_writer_loses_nothing_it_reported(tmp_path):
    path = tmp_path / "t.sqlite"
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(path), K, "1000000", "run"],
                         stdout=subprocess.PIPE, text=True)
    printed = [p.stdout.readline() for _ in range(30)]
    p.kill()  # SIGKILL: no cleanup, perhaps mid-transaction
    p.wait()
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with TuningStore(path) as s:
        stored = {e.knobs["threads"] for e in s.evaluations(K, ARCH)}
    assert {int(line) for line in printed} <= stored


def test_two_writers_at_once(tmp_path):
    path = tmp_path / "t.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), key, "200", "run"],
                              stdout=subprocess.DEVNULL) for key in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with TuningStore(path) as s:
        assert [len(s.evaluations(k, ARCH)) for k in ("a", "b")] == [200, 200]


def test_not_a_store_is_one_clear_line(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not sqlite\n" * 100)
    with pytest.raises(StoreError) as err:
        TuningStore(bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)
