"""What one launch writes, the next reads from L2 (the model's program level): split-K partials
and a layer's activations; the program's inputs (weights) still come from DRAM."""

from deplo.analysis import cost_model as cm
from deplo.dialects import kernel
from deplo.tools import api


def _kernels(expr: str):
    kmod = api.compile(expr, seed=0, rank=False).module("kernel")  # the heuristic's plans
    funcs = {f.sym_name.data: f for f in kmod.ops if isinstance(f, kernel.FuncOp)}
    works = {name: cm.work(f) for name, f in funcs.items()}
    return kmod, funcs, works, cm.l2_resident(kmod, works)


def test_split_k_partials_are_read_from_l2():
    kmod, funcs, works, in_l2 = _kernels("F.linear(torch.randn(128,2048), torch.randn(2048,2048))")
    assert set(funcs) == {"linear", "linear_sum"}  # the heuristic splits K here (16 splits)
    assert in_l2["linear"] == frozenset()  # x and the weight are the program's inputs
    (partials,) = [k for k in works["linear"].written if "partials" in k]
    assert in_l2["linear_sum"] == {partials}
    cold = cm.predict_func(funcs["linear_sum"], None, cm.H100_SXM, works["linear_sum"])
    warm = cm.predict_module(kmod)["linear_sum"]
    assert warm.dram_bytes < cold.dram_bytes / 4 and warm.us < cold.us


def test_an_activation_written_before_is_in_l2_and_a_weight_is_not():
    _, _, works, in_l2 = _kernels(
        "torch.matmul(F.layer_norm(torch.randn(64,256),(256,)), torch.randn(256,512))")
    assert in_l2 == {"layer_norm": frozenset(), "matmul": {"0:layer_norm"}}, in_l2
    assert "1:x1" in works["matmul"].touched  # the weight: read from DRAM


def test_an_output_stored_by_the_last_block_is_in_l2_for_the_next_launch():
    _, funcs, works, in_l2 = _kernels(
        "torch.matmul(torch.matmul(torch.randn(64,256), torch.randn(256,256)), torch.randn(256,512))")
    first, second = funcs  # program order
    assert works[first].tail is not None  # split-K finished by the last block (it stores out)
    assert in_l2[second] == {"0:matmul"}, in_l2


def test_launches_inside_a_called_function_are_followed():
    """A model's decoder layer is a func.call'd function: its launches count, in order."""
    from xdsl.parser import Parser

    from deplo.tools.driver import make_context

    text = """
kernel.func @produce(%x: memref<256xf32>, %y: memref<256xf32>) grid(1, 1, 1) block(256, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<256xf32>
  memref.store %v, %y[%t] : memref<256xf32>
}
kernel.func @consume(%y: memref<256xf32>, %z: memref<256xf32>) grid(1, 1, 1) block(256, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %y[%t] : memref<256xf32>
  memref.store %v, %z[%t] : memref<256xf32>
}
func.func @layer(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<256xf32>) {
  kernel.launch @produce(%a, %b) : memref<256xf32>, memref<256xf32>
  kernel.launch @consume(%b, %c) : memref<256xf32>, memref<256xf32>
  func.return
}
func.func @main(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<256xf32>) {
  func.call @layer(%a, %b, %c) : (memref<256xf32>, memref<256xf32>, memref<256xf32>) -> ()
  func.return
}"""
    module = Parser(make_context(), text).parse_module()
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, kernel.FuncOp)}
    works = {n: cm.work(f) for n, f in funcs.items()}
    assert cm.l2_resident(module, works) == {"produce": frozenset(), "consume": {"0:y"}}


def test_a_kernel_planned_alone_reads_its_partials_from_l2():
    """The tuner predicts a kernel alone (no @main): its sum kernel still finds the partials
    in L2, as it will in the program."""
    from deplo.tuning.tune import lower_with, tasks

    (task,) = tasks(api.compile("F.linear(torch.randn(128,2048), torch.randn(2048,2048))", seed=0,
                                rank=False))
    module = lower_with(task, task.default)
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, kernel.FuncOp)}
    works = {n: cm.work(f) for n, f in funcs.items()}
    assert cm.l2_resident(module, works) == {"linear": frozenset(), "linear_sum": {"3:partials"}}
