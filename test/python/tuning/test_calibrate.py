"""`deplo tune --calibrate`: random plans of each kernel, predicted and (on a GPU) measured."""

import functools
import json

from deplo.tools import api
from deplo.tuning import calibrate as cal
from deplo.tuning.search import plan_id
from deplo.tuning.tune import tasks

EXPR = "F.linear(torch.randn(64,256), torch.randn(96,256))"


_make = functools.partial(api.compile, EXPR, seed=0)  # importable by spawned workers


def test_random_plans_start_with_the_heuristic_and_are_distinct():
    (task,) = tasks(_make())
    plans = cal.random_plans(task, 8, seed=3)
    assert plans[0] == task.default
    assert len({plan_id(p) for p in plans}) == len(plans) > 1
    assert plans == cal.random_plans(task, 8, seed=3)  # reproducible


def test_spearman():
    assert cal.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert cal.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert cal.spearman([1, 2], [1, 2]) is None


def test_summary_against_a_fake_gpu(monkeypatch):
    """The measured side through the GPU evaluator's seam: a fake GPU twice as slow as the model
    on every plan but the heuristic's, which it runs 10x slower."""
    from deplo.tools import tune_cmd

    (task,) = tasks(_make())

    def fake_gpu(compiled, lock):
        def measure(t, plan):
            with lock:
                us = cal.predict_us(t, plan)
                return us * (10 if plan == task.default else 2)
        return measure

    monkeypatch.setattr(tune_cmd, "gpu_measure", fake_gpu)
    report = cal.calibrate(_make, 5, "h100", on_gpu=True)
    (k,) = report["kernels"]
    assert k["plans"] == k["timed"] == len(report["rows"]) == 5
    assert k["measured_over_predicted"] > 2
    assert k["heuristic_over_best"] > 1 and k["best_plan"] != task.default
    json.dumps(report)
    assert "rank correlation" in cal.format_calibration(report)


def test_cli_without_gpu_writes_predictions(tmp_path, capsys, monkeypatch):
    from deplo.runtime import gpu
    from deplo.tools.deplo_main import main

    monkeypatch.setattr(gpu, "gpu_probe", lambda: (False, "no GPU (test)"))
    out = tmp_path / "cal.json"
    assert main(["tune", "-c", EXPR, "--calibrate", "3", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["measured"] is False and len(report["rows"]) == 3
    assert all(r["predicted_us"] > 0 and r["measured_us"] is None for r in report["rows"])
    assert "predictions only" in capsys.readouterr().out
    assert not (tmp_path / "cal.json.tmp").exists()


def test_cli_rejects_what_calibration_ignores(capsys):
    from deplo.tools.deplo_main import main

    assert main(["tune", "-c", EXPR, "-o", "x.json"]) != 0
    assert "-o goes with --calibrate" in capsys.readouterr().err
    assert main(["tune", "-c", EXPR, "--calibrate", "2", "--ray", "local"]) != 0
    assert "not on Ray" in capsys.readouterr().err


def test_workers_predict_what_one_process_does():
    """Compiled programs hold IR that does not pickle: workers build the program again."""
    one = cal.calibrate(_make, 3, "h100", on_gpu=False)
    two = cal.calibrate(_make, 3, "h100", on_gpu=False, workers=2)
    assert [r["predicted_us"] for r in two["rows"]] == [r["predicted_us"] for r in one["rows"]]
    assert [r["index"] for r in two["rows"]] == [0, 1, 2]


def test_a_run_cut_short_keeps_its_rows(monkeypatch):
    clock = iter(range(1000))  # each look at the clock a second later: the deadline after 3
    monkeypatch.setattr(cal.time, "monotonic", lambda: float(next(clock)))
    seen = []
    report = cal.calibrate(_make, 6, "h100", on_gpu=False, seconds=3.5,
                           on_row=lambda r, total: seen.append((len(r["rows"]), total)))
    assert 1 <= len(report["rows"]) < 6
    assert [n for n, _ in seen] == list(range(1, len(report["rows"]) + 1))
    assert all(total == 6 for _, total in seen)


def test_ties_share_their_rank():
    assert cal._ranks([3.0, 1.0, 3.0, 2.0]) == [2.5, 0.0, 2.5, 1.0]
    assert cal.spearman([1, 1, 2, 3], [5, 6, 7, 8]) > 0.9
