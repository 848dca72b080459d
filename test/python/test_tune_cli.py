"""`deplo tune` as a user runs it (the model evaluator: no GPU here): it stores its evaluations,
the tuned plan is predicted no slower than the heuristic's, a rerun evaluates nothing new,
`deplo compile|run --db` use the stored plan and still check, `--report`/`--plot` read the
store; the correctness gate rejects a wrong plan; a local process pool gives the same store."""

from __future__ import annotations

import json

import pytest
from test_cli import assert_clean_error, run

import deplo
from deplo.tuning.store import TuningStore
from deplo.tuning.tune import ARCH, Evaluator, plan_tree, program_check, report_rows, tasks, tune

MM = "torch.matmul(torch.randn(48,80), torch.randn(80,40))"
TWO = "torch.softmax(torch.randn(40,96) @ torch.randn(96,64), 0).sum(1)"


def _rows(db) -> list:
    with TuningStore(db) as s:
        return [e for k in s.kernels(ARCH) for e in s.evaluations(k, ARCH)]


def test_tune_stores_resumes_and_is_used(tmp_path) -> None:
    db = str(tmp_path / "t.sqlite")
    p = run("deplo", "tune", "-c", MM, "--budget", "6", "--db", db)
    assert p.returncode == 0, p.stderr
    rows = _rows(db)
    assert 1 <= len(rows) <= 6 and {e.evaluator for e in rows} == {"model"}
    with TuningStore(db) as s:
        (key,) = s.kernels(ARCH)
        best = s.best(key, ARCH)
    assert best is not None and best.status == "verified"
    assert f"{len(rows)} evaluated, 0 stored" in p.stdout
    with TuningStore(db) as s:
        (row,) = report_rows(s)
    assert row["best_us"] <= row["default_us"] and row["speedup"] >= 1.0

    found = tmp_path / "found.json"  # (the best plans as a plan file, the store reused)
    again = run("deplo", "tune", "-c", MM, "--budget", "6", "--db", db, "--schedule-out",
                str(found))
    assert again.returncode == 0, again.stderr
    assert "0 evaluated" in again.stdout and len(_rows(db)) == len(rows)
    assert json.loads(found.read_text())["kernels"][key]["knobs"] == best.knobs
    pinned = run("deplo", "run", "-c", MM, "--schedule", str(found), "--check")
    assert pinned.returncode == 0 and "PASS" in pinned.stdout, pinned.stderr
    assert_clean_error(run("deplo", "tune", "-c", MM, "--db", db, "--schedule", str(found)),
                       "--schedule: tuning starts from the heuristic's plans")

    out = run("deplo", "run", "-c", MM, "--db", db, "--check", "-v")
    assert out.returncode == 0 and "PASS" in out.stdout, out.stderr
    assert f"tuned plan of matmul [{key}]" in out.stderr
    other = run("deplo", "run", "-c", "torch.randn(7,3).sum(-1)", "--db", db, "-v")
    assert other.returncode == 0 and "tuned plan of" not in other.stderr, other.stderr  # not
    stray = tmp_path / "stray.json"  # its kernel; and the user's plan file stays strict
    stray.write_text(json.dumps({"format": "deplo-plans/1", "kernels": {
        "deadbeefdeadbeef": {"name": "matmul", "kind": "matmul", "knobs": {}}}}))
    assert_clean_error(run("deplo", "run", "-c", MM, "--db", db, "--schedule", str(stray)),
                       f"{stray}: kernel deadbeefdeadbeef (matmul) matches no kernel")
    plans = tmp_path / "p.json"
    c = run("deplo", "compile", "-c", MM, "--db", db, "--ir", "tile", "--schedule-out", str(plans))
    assert c.returncode == 0, c.stderr
    assert json.loads(plans.read_text())["kernels"][key]["knobs"] == best.knobs

    rep = run("deplo", "tune", "--report", "--db", db, "--plot", str(tmp_path / "t.png"),
              "-o", str(tmp_path / "r.json"))
    assert rep.returncode == 0, rep.stderr
    assert key in rep.stdout and "speedup" in rep.stdout
    assert (tmp_path / "t.png").stat().st_size > 1000
    (row,) = json.loads((tmp_path / "r.json").read_text())["kernels"]
    assert row["key"] == key and row["best_plan"] == best.plan
    assert_clean_error(run("deplo", "tune", "--report", "--db", db, "--plot", "/proc/t.png"),
                       "cannot write /proc/t.png")


def test_user_schedule_wins_over_the_store(tmp_path) -> None:
    db = str(tmp_path / "t.sqlite")
    assert run("deplo", "tune", "-c", MM, "--budget", "3", "--db", db).returncode == 0
    plans = tmp_path / "p.json"
    assert run("deplo", "compile", "-c", MM, "--ir", "tile", "--schedule-out",
               str(plans)).returncode == 0
    data = json.loads(plans.read_text())
    (entry,) = data["kernels"].values()
    entry["knobs"]["threads_m"], entry["knobs"]["threads_n"] = 4, 4
    plans.write_text(json.dumps(data))
    out = tmp_path / "o.json"
    c = run("deplo", "compile", "-c", MM, "--db", db, "--schedule", str(plans), "--ir", "tile",
            "--schedule-out", str(out))
    assert c.returncode == 0, c.stderr
    (got,) = json.loads(out.read_text())["kernels"].values()
    assert got["knobs"]["threads_m"] == 4 and got["knobs"]["threads_n"] == 4


def test_gate_rejects_a_wrong_plan(tmp_path) -> None:
    """A check that fails the fastest plan: it is stored as rejected, the next one is chosen."""
    compiled = deplo.compile(MM)
    calls = []

    def check(plans: dict) -> bool:
        calls.append(plans)
        return len(calls) > 2  # the joint check and the first single check fail

    with TuningStore(tmp_path / "t.sqlite") as store:
        (rep,) = tune(compiled, store, 5, Evaluator("h100"), check)
        rows = store.evaluations(rep.task.key, ARCH)
    assert len(rep.rejected) == 1 and rep.best is not None
    assert rep.rejected[0].time_us <= rep.best.time_us
    assert {e.status for e in rows} >= {"rejected", "verified"}


def test_gate_checks_against_pytorch() -> None:
    compiled = deplo.compile(MM)
    (task,) = tasks(compiled)
    check = program_check(compiled, "cpu")
    assert check({"format": "deplo-plans/1", "kernels": {
        task.key: {"name": task.name, "kind": task.default["kind"],
                   "knobs": {k: v for k, v in task.default.items() if k != "kind"}}}})


def test_tree_walks_legal_plans() -> None:
    """The first level is the class; every domain value leads on to a completable plan."""
    (task,) = tasks(deplo.compile(MM))
    tree = plan_tree(task)
    assert tree.next_knob({}) == "kind" and tree.domain("kind", {})[0] == "matmul"
    assert tree.rollout({}) == task.default
    knobs = {"kind": "pointwise"}
    while (name := tree.next_knob(knobs)) is not None:
        knobs[name] = tree.domain(name, knobs)[-1]
    assert tree.rollout(knobs) == knobs


def test_workers_tune_two_kernels(tmp_path) -> None:
    db = str(tmp_path / "t.sqlite")
    p = run("deplo", "tune", "-c", TWO, "--budget", "3", "--workers", "2", "--db", db)
    assert p.returncode == 0, p.stderr
    with TuningStore(db) as s:
        keys = s.kernels(ARCH)
        assert len(keys) >= 3 and all(s.best(k, ARCH) is not None for k in keys)


def test_ray_local(tmp_path) -> None:
    pytest.importorskip("ray")
    db = str(tmp_path / "t.sqlite")
    p = run("deplo", "tune", "-c", MM, "--budget", "3", "--ray", "local", "--db", db)
    assert p.returncode == 0, p.stderr
    assert len(_rows(db)) == 3


@pytest.mark.parametrize("address,needle", [("127.0.0.1:1", "nothing answers there"),
                                             ("bogus", "Invalid address format")])
def test_a_ray_cluster_that_does_not_answer_is_one_line(tmp_path, address, needle) -> None:
    """Not minutes of ray.init's retries: the address is tried for 5 s first."""
    pytest.importorskip("ray")
    db = str(tmp_path / "t.sqlite")
    assert_clean_error(run("deplo", "tune", "-c", MM, "--budget", "1", "--ray", address,
                           "--db", db), f"--ray {address}: {needle}")


def test_bad_store_is_one_line(tmp_path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database\n" * 10)
    assert_clean_error(run("deplo", "tune", "--report", "--db", str(bad)), str(bad))
    assert_clean_error(run("deplo", "compile", "-c", MM, "--db", str(bad)), str(bad))
    nowhere = tmp_path / "missing" / "t.sqlite"  # a mistyped directory is not made
    assert_clean_error(run("deplo", "tune", "-c", MM, "--budget", "1", "--db", str(nowhere)),
                       f"no directory {nowhere.parent} (create it first)")
    assert not nowhere.parent.exists()


def test_time_limit_and_bad_time(tmp_path) -> None:
    db = str(tmp_path / "t.sqlite")
    p = run("deplo", "tune", "-c", MM, "--budget", "50", "--time", "0.001", "--db", db)
    assert p.returncode == 0, p.stderr
    assert 1 <= len(_rows(db)) < 50
    bad = run("deplo", "tune", "-c", MM, "--time", "-3", "--db", db)
    assert bad.returncode == 2 and "positive number of seconds" in bad.stderr


def test_report_of_a_missing_store_and_a_program_without_kernels(tmp_path) -> None:
    missing = tmp_path / "none.sqlite"
    p = run("deplo", "tune", "--report", "--db", str(missing))
    assert p.returncode == 1 and "no such tuning store" in p.stderr and not missing.exists()
    p = run("deplo", "tune", "-c", "torch.randn(3)", "--db", str(tmp_path / "t.sqlite"))
    assert p.returncode == 0 and "no kernels to tune" in p.stdout


def test_plot_without_report_and_a_missing_output_folder_are_clear_errors(tmp_path):
    """`--plot` is only drawn with `--report` (it was ignored silently); an output in a folder
    that does not exist says so (it said "is not a directory")."""
    from test_cli import assert_clean_error, run

    assert_clean_error(run("deplo", "tune", "-c", "torch.exp(torch.randn(4))", "--plot",
                           str(tmp_path / "t.png")), "--plot", "--report")
    p = run("deplo", "run", "-c", "torch.exp(torch.randn(4))", "--bench", "-o",
            str(tmp_path / "nodir" / "x.json"))
    assert p.returncode == 2 and "Traceback" not in p.stderr  # (argparse's usage error)
    assert "no directory" in p.stderr and "nodir (create it first)" in p.stderr


def test_an_interrupted_tune_keeps_its_evaluations(tmp_path, monkeypatch) -> None:
    """Ctrl-C during the search: one line saying so (status 130), and what was evaluated stays
    in the store, so the rerun goes on from it."""
    import deplo.tuning.tune as tuning

    real = tuning.tune

    def interrupted(*args, progress, **kw):
        def stop(task, done, best_us):
            progress(task, done, best_us)
            if done >= 2:
                raise KeyboardInterrupt
        return real(*args, progress=stop, **kw)

    db = str(tmp_path / "t.sqlite")
    monkeypatch.setattr(tuning, "tune", interrupted)
    p = run("deplo", "tune", "-c", MM, "--budget", "6", "--db", db)
    assert p.returncode == 130 and "Traceback" not in p.stderr
    assert "deplo: interrupted" in p.stderr and f"in {db}: a rerun resumes" in p.stderr
    kept = len(_rows(db))
    assert kept >= 2
    monkeypatch.setattr(tuning, "tune", real)
    again = run("deplo", "tune", "-c", MM, "--budget", "6", "--db", db)
    assert again.returncode == 0 and f"{kept} stored" in again.stdout, again.stderr
