"""The Python API as a PyTorch user calls it: a compiled module called like the module."""

import pytest
import torch
import torch.nn.functional as F

import deplo


def _seeded(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_a_compiled_module_is_called_like_the_module() -> None:
    """Torch tensors in, the module's outputs in its dtypes out (bf16 crosses the runtime as
    float32), the weights supplied; a single tensor is taken as the example input."""
    lin = torch.nn.Linear(16, 8)

    def fn(x):
        return lin(x).to(torch.bfloat16), x.argmax(-1)

    c = deplo.compile(fn, _seeded(3, 16))
    x = _seeded(3, 16, seed=1)
    y, i = c(x)
    ref_y, ref_i = fn(x)
    assert y.dtype == torch.bfloat16 and i.dtype == torch.int64
    torch.testing.assert_close(y, ref_y.detach(), rtol=1e-2, atol=1e-2)
    assert torch.equal(i, ref_i)
    with pytest.raises(TypeError, match="takes 1 input"):
        c(x, x)


def test_layer_norm_of_a_large_offset_is_as_accurate_as_float32_allows() -> None:
    """x = noise + 1e4: a float32 mean of x rounds by up to half an ulp of 1e4, 5e-4 of every
    output (eager is 1.5e-3 off float64); the deviations from each row's first element are
    exact, and their mean is not rounded by the offset."""
    ln = torch.nn.LayerNorm(256)
    with torch.no_grad():
        ln.weight.copy_(_seeded(256, seed=1))
        ln.bias.copy_(_seeded(256, seed=2))
    x = _seeded(4, 256) + 1e4
    y = deplo.compile(ln.eval(), [x])(x)
    exact = F.layer_norm(x.double(), (256,), ln.weight.double(), ln.bias.double())
    assert (y.double() - exact).abs().max() < 1e-5


def test_a_module_in_training_mode_is_compiled_for_inference_and_says_so(capsys) -> None:
    """Batch norm and dropout are what eval mode changes: they are named; a module whose mode
    changes nothing (a Linear, a batch norm without running statistics) compiles silently."""
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout())
    deplo.compile(net, [_seeded(2, 4)])
    err = capsys.readouterr().err
    assert "'1', '2' are in training mode" in err and ".eval()" in err
    assert net.training
    quiet = torch.nn.Sequential(torch.nn.Linear(4, 4),
                                torch.nn.BatchNorm1d(4, track_running_stats=False))
    deplo.compile(quiet, [_seeded(2, 4)])
    deplo.compile(net.eval(), [_seeded(2, 4)])
    assert "training mode" not in capsys.readouterr().err
    net.train()
    deplo.compile(lambda x: net(x) * 2, [_seeded(2, 4)])  # named as the user's, not our wrapper's
    assert "'1', '2' are in training mode" in capsys.readouterr().err


def test_compiling_leaves_every_module_in_its_own_mode() -> None:
    """A callable's model in eval mode stays so (its wrapper, a fresh module in training mode,
    was put back with train(True), which reached the model: eager then ran dropout); a batch
    norm frozen in eval inside a model in training mode stays frozen."""
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout()).eval()
    deplo.compile(lambda x: net(x) * 2, [_seeded(2, 4)])
    assert not any(m.training for m in net.modules())
    mixed = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).train()
    mixed[1].eval()
    deplo.compile(mixed, [_seeded(2, 4)])
    assert mixed.training and mixed[0].training and not mixed[1].training


def test_tensors_in_containers_are_inputs_and_outputs_keep_their_structure() -> None:
    """A dict's or a list's tensors are the program's inputs (they were frozen into it as
    constants); the outputs come back as the module returns them (a dict, topk's values and
    indices, an LSTM's nested tuple); a bound number or another structure is refused."""
    lin = torch.nn.Linear(8, 4)

    def fn(d, xs, k):
        return {"out": lin(d["x"]) + d["y"], "top": torch.topk(xs[0] * xs[1] * k, 2, -1)}

    args = ({"x": _seeded(2, 8), "y": _seeded(2, 4, seed=1)}, [_seeded(3, 5, seed=2),
                                                             _seeded(3, 5, seed=3)], 2.0)
    c = deplo.compile(fn, list(args))
    assert len(c.program.example_inputs) == 4
    fresh = ({"x": _seeded(2, 8, seed=4), "y": _seeded(2, 4, seed=5)},
             [_seeded(3, 5, seed=6), _seeded(3, 5, seed=7)], 2.0)
    got, want = c(*fresh), fn(*fresh)
    torch.testing.assert_close(got["out"], want["out"].detach())
    assert torch.equal(got["top"].indices, want["top"].indices)
    reordered = {"y": fresh[0]["y"], "x": fresh[0]["x"]}  # a dict's key order is no structure
    torch.testing.assert_close(c(reordered, *fresh[1:])["out"], got["out"])
    with pytest.raises(TypeError, match="2.0 is bound"):
        c(*fresh[:2], 3.0)
    with pytest.raises(TypeError, match="2.0 is bound"):
        c(*fresh[:2], 2)  # (an int where a float was bound: another program)
    with pytest.raises(TypeError, match="structured as its example inputs"):
        c(fresh[0], tuple(fresh[1]), 2.0)
    lstm = torch.nn.LSTM(4, 6, batch_first=True).eval()
    _, (h, _) = deplo.compile(lstm, [_seeded(1, 3, 4)])(_seeded(1, 3, 4, seed=8))
    torch.testing.assert_close(h, lstm(_seeded(1, 3, 4, seed=8))[1][0].detach())


class _Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls += 1
        return x + self.calls


def test_a_buffer_the_forward_updates_is_named(capsys) -> None:
    """The update is compiled away (each call reads the buffer as it was): said, not silent."""
    c = deplo.compile(_Counter(), [_seeded(3)])
    assert "updates 'calls' in place" in capsys.readouterr().err
    torch.testing.assert_close(c(torch.zeros(3)), torch.ones(3))


def test_an_index_input_past_its_table_raises_index_error_before_a_run() -> None:
    """The kernels read a table at the index as given (no device-side check): an embedding's ids,
    `x[i]`'s and torch.gather's index that are inputs are checked on the host, as eager raises;
    a negative `x[i]` counts from the end, a negative gather index is an error, as in eager."""
    emb = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 9, 0]])
    c = deplo.compile(emb, ids)
    torch.testing.assert_close(c(ids), emb(ids).detach())
    for bad in (10, -1):
        with pytest.raises(IndexError, match=rf"index {bad} in input 0 .*aten.embedding.*valid 0\.\.9"):
            c(torch.tensor([[1, bad, 0]]))
    x = _seeded(5, 3)
    c = deplo.compile(lambda x, i: x[i.int()], (x, torch.tensor([0, 4])))
    torch.testing.assert_close(c(x, torch.tensor([-5, 4])), x[[-5, 4]])
    with pytest.raises(IndexError, match=r"index 5 in input 1 .*aten.index.*valid -5\.\.4"):
        c(x, torch.tensor([5, 0]))
    c = deplo.compile(lambda x, i: torch.gather(x, 1, i), (x, torch.zeros(5, 2, dtype=torch.long)))
    with pytest.raises(IndexError, match=r"index -1 .*aten.gather.*valid 0\.\.2"):
        c.run([x, torch.full((5, 2), -1)])


def test_an_input_of_another_dtype_is_refused_not_converted() -> None:
    """The program is compiled for its examples' dtypes: c(...) refuses a tensor of another
    dtype (the runtime would convert it: 1.5 read as 1, a uint8 sum as a bool's); run(...)
    takes numpy arrays of the same kind (float64 for float32: the numpy convenience)."""
    import numpy as np

    c = deplo.compile(lambda a: a * 3 + 1, [torch.tensor([1, 2, 3], dtype=torch.int32)])
    assert torch.equal(c(torch.tensor([4, 5, 6], dtype=torch.int32)),
                       torch.tensor([13, 16, 19], dtype=torch.int32))
    for other in (torch.tensor([1.5, 2.5, -0.7]), torch.tensor([1, 2, 3])):
        with pytest.raises(TypeError, match=r"input 0 .* is torch\.(float32|int64), the "
                                            r"example was torch\.int32"):
            c(other)
    assert c.run([np.array([1, 2, 3])])[0].tolist() == [4, 7, 10]
    with pytest.raises(TypeError, match="is float64, the example was int32"):
        c.run([np.array([1.5, 2.0, 3.0])])
    c = deplo.compile(lambda m: m.sum(), [torch.tensor([True, False])])
    with pytest.raises(TypeError, match="is torch.uint8, the example was torch.bool"):
        c(torch.tensor([7, 9], dtype=torch.uint8))


def test_api_misuse_is_one_clear_error() -> None:
    from deplo.frontend.errors import FrontendError

    c = deplo.compile("torch.relu(torch.randn(2,2))")
    with pytest.raises(ValueError, match="unknown level 'nonsense': expected one of torch"):
        c.text("nonsense")
    with pytest.raises(TypeError, match="a callable, got NoneType"):
        deplo.compile(None)
    with pytest.raises(TypeError, match="example inputs are positional"):
        deplo.compile(torch.nn.ReLU(), {"x": torch.randn(2)})
    with pytest.raises(TypeError, match="run\\(\\) takes a list of inputs"):
        c.run(torch.randn(2, 2))
    with pytest.raises(FrontendError, match="sparse_coo tensor: deplo takes dense tensors"):
        deplo.compile(lambda x: x * 2, [torch.randn(4, 4).to_sparse()])
    c = deplo.compile(lambda *xs: xs[0] + xs[1], [torch.randn(6, 8)] * 2)
    with pytest.raises(ValueError, match=r"input 1 \('xs_1'\) has shape \(6, 9\), the example "
                                         r"\(6, 8\)"):
        c(torch.randn(6, 8), torch.randn(6, 9))
    with pytest.raises(TypeError, match=r"input 0 \('xs_0'\) is None, the example was a tensor"):
        c(None, torch.randn(6, 8))
