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


def test_cli_without_gpu_writes_predictions(tmp_path, capsys):
    from deplo.tools.deplo_main import main

    out = tmp_path / "cal.json"
    assert main(["tune", "-c", EXPR, "--calibrate", "3", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["measured"] is False and len(report["rows"]) == 3
    assert all(r["predicted_us"] > 0 and r["measured_us"] is None for r in report["rows"])
    assert "predictions only" in capsys.readouterr().out


def test_workers_build_the_program_again():
    """Compiled programs hold IR that does not pickle: workers get the recipe."""
    report = cal.calibrate(_make, 3, "h100", on_gpu=False, workers=2)
    assert len(report["rows"]) == 3 and report["rows"][0]["predicted_us"] > 0


def test_a_run_cut_short_keeps_its_rows():
    seen = []
    report = cal.calibrate(_make, 6, "h100", on_gpu=False, seconds=1e-9,
                           on_row=lambda r, total: seen.append((len(r["rows"]), total)))
    assert len(report["rows"]) < 6 and [n for n, _ in seen] == list(range(1, len(seen) + 1))
    full = cal.calibrate(_make, 3, "h100", on_gpu=False, on_row=lambda r, t: seen.append(t))
    assert len(full["rows"]) == 3 and full["kernels"][0]["heuristic_predicted_us"] > 0
