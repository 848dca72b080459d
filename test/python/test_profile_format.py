"""`deplo run --bench --profile`'s summary: the model's number is never labelled measured."""

from deplo.tools.profile import format_profile

REPORT = {"gpu_model": "H200 SXM", "predicted_us": 7.13, "launches": 1, "roofline_us": 3.0,
          "predicted_over_roofline": 2.377, "kernels": []}


def test_summary_without_a_gpu():
    text = format_profile({**REPORT, "measured": None}, rows=False)
    assert text.startswith("H200 SXM: predicted (sm_90 model, no GPU run) 7.13 us over 1 launch")
    assert "measured" not in text


def test_summary_with_a_gpu_run():
    measured = {"deplo_us": 9.36, "eager_us": 9.2463999, "inductor_us": None}
    first, second = format_profile({**REPORT, "measured": measured}, rows=False).splitlines()
    assert first.startswith("H200 SXM: predicted (sm_90 model) 7.13 us") and "measured" not in first
    assert second == "measured 9.36 us; eager 9.25 us"


def test_baselines_take_the_programs_dtypes():
    """The eager / torch.compile baselines of a bf16 program run in bf16 (they ran in fp32)."""
    import torch

    import deplo
    from deplo.tools.api import random_inputs

    c = deplo.compile("F.linear(torch.randn(4,8,dtype=torch.bfloat16), "
                      "torch.randn(6,8,dtype=torch.bfloat16)) + torch.randn(6)")
    inputs = random_inputs(c.program, 0)
    args = c.program.torch_inputs(inputs[:len(c.program.example_inputs)])
    assert [a.dtype for a in args] == [torch.bfloat16, torch.bfloat16, torch.float32]
    assert [tuple(a.shape) for a in args] == [(4, 8), (6, 8), (6,)]
    assert torch.equal(args[2], torch.from_numpy(inputs[2]))


def test_a_program_that_launches_nothing_has_no_ratio():
    """An empty tensor's relu launches nothing: 0 us against a roofline of 0, no ratio (it said
    0.00 us against 2.50 us, 0.00x)."""
    import deplo
    from deplo.tools.profile import profile

    report = profile(deplo.compile("torch.relu(torch.randn(0, 37))"))
    assert (report["launches"], report["predicted_us"], report["roofline_us"]) == (0, 0, 0)
    assert report["predicted_over_roofline"] is None
    assert "(no kernel to run)" in format_profile(report, rows=False)


def test_kernels_renamed_for_c_keep_their_ptxas_figures():
    """`exp` is `exp_k` in the .cu (a libm name): the profile and the bench's static figures
    still find its registers (the model assumed 32 without them)."""
    import deplo
    from deplo.tools.bench import static_figures
    from deplo.tools.profile import profile

    c = deplo.compile("torch.exp(torch.randn(64, 1000))")
    (row,) = profile(c)["kernels"]
    assert row["name"] == "exp" and row["registers"] is not None
    (k,) = static_figures(c, "sm_90")["per_kernel"]
    assert k["name"] == "exp_k" and k["predicted_us"] == row["predicted_us"]
