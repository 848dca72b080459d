"""Torch IR: a 1:1 mirror of the ATen ops that `torch.export` captured.

Ops keep torch's names and attributes, operands and results are ranked tensors, and the
verifiers check shapes and dtypes the way PyTorch would, so a wrong import is caught here rather
than three levels down. Weights are arguments of `@main` named after their module path.

    func.func @main(%x: tensor<16x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
      %y = torch.add %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
      %r = torch.relu %y : (tensor<16x64xf32>) -> tensor<16x64xf32>
      func.return %r : tensor<16x64xf32>
    }

A family of ops is one row of a table: `UNARY_OPS` and `BINARY_OPS` below generate the
elementwise ops; the torch-to-tir decomposition and the interpreter read the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

FLOAT_TYPES = ("f32", "f16", "bf16", "f64")


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """PyTorch/numpy broadcasting of two shapes, or None where they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y) if 1 not in (x, y) else x * y)
    return tuple(reversed(out))


def _tensor(op: IRDLOperation, value: SSAValue, what: str) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise VerifyException(f"{op.name}: expected {what} to be a ranked tensor, got {value.type}")
    return value.type


def _shape(t: TensorType) -> tuple[int, ...]:
    return tuple(t.get_shape())


def _same_element_type(op: IRDLOperation, *types: TensorType) -> None:
    elts = {str(t.element_type) for t in types}
    if len(elts) != 1:
        raise VerifyException(f"{op.name}: expected one element type, got {sorted(elts)}")


class _TorchOp(IRDLOperation):
    """Shared syntax: `torch.NAME %a, %b {attrs} : (types) -> type`."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"


# ---------------------------------------------------------------------------------------------
# elementwise families


UNARY_OPS: dict[str, str] = {
    # torch op name -> class name
    "relu": "ReluOp",
    "neg": "NegOp",
    "exp": "ExpOp",
    "rsqrt": "RsqrtOp",
    "sqrt": "SqrtOp",
    "tanh": "TanhOp",
    "sigmoid": "SigmoidOp",
    "silu": "SiluOp",
}

BINARY_OPS: dict[str, str] = {
    "add": "AddOp",
    "sub": "SubOp",
    "mul": "MulOp",
    "div": "DivOp",
    "maximum": "MaximumOp",
    "minimum": "MinimumOp",
}


def _unary_verify(self) -> None:
    a = _tensor(self, self.input, "the operand")
    r = _tensor(self, self.result, "the result")
    if _shape(a) != _shape(r):
        raise VerifyException(f"{self.name}: expected result shape {_shape(a)}, got {_shape(r)}")
    _same_element_type(self, a, r)


def _binary_verify(self) -> None:
    a = _tensor(self, self.lhs, "the lhs")
    b = _tensor(self, self.rhs, "the rhs")
    r = _tensor(self, self.result, "the result")
    want = broadcast_shapes(_shape(a), _shape(b))
    if want is None:
        raise VerifyException(f"{self.name}: shapes {_shape(a)} and {_shape(b)} do not broadcast")
    if want != _shape(r):
        raise VerifyException(f"{self.name}: expected result shape {want}, got {_shape(r)}")
    _same_element_type(self, a, b, r)


def _make_unary(op_name: str, cls_name: str) -> type[IRDLOperation]:
    cls = type(
        cls_name,
        (_TorchOp,),
        {
            "__doc__": f"`torch.{op_name} %x : (tensor<4xf32>) -> tensor<4xf32>` (aten.{op_name}).",
            "name": f"torch.{op_name}",
            "input": operand_def(TensorType),
            "result": result_def(TensorType),
            "traits": traits_def(Pure()),
            "verify_": _unary_verify,
            "__init__": lambda self, x, result_type: IRDLOperation.__init__(
                self, operands=[x], result_types=[result_type]
            ),
        },
    )
    return irdl_op_definition(cls)


def _make_binary(op_name: str, cls_name: str) -> type[IRDLOperation]:
    cls = type(
        cls_name,
        (_TorchOp,),
        {
            "__doc__": f"`torch.{op_name} %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> "
            f"tensor<4x8xf32>` (aten.{op_name}, with broadcasting).",
            "name": f"torch.{op_name}",
            "lhs": operand_def(TensorType),
            "rhs": operand_def(TensorType),
            "result": result_def(TensorType),
            "traits": traits_def(Pure()),
            "verify_": _binary_verify,
            "__init__": lambda self, a, b, result_type: IRDLOperation.__init__(
                self, operands=[a, b], result_types=[result_type]
            ),
        },
    )
    return irdl_op_definition(cls)


UNARY_CLASSES = {name: _make_unary(name, cls) for name, cls in UNARY_OPS.items()}
BINARY_CLASSES = {name: _make_binary(name, cls) for name, cls in BINARY_OPS.items()}
globals().update({c.__name__: c for c in (*UNARY_CLASSES.values(), *BINARY_CLASSES.values())})


# ---------------------------------------------------------------------------------------------
# structured ops


@irdl_op_definition
class ConstantOp(_TorchOp):
    """A 0-d scalar tensor from a Python number in the program, e.g. the `2.0` in `x * 2.0`:
    `torch.constant {value = 2.0 : f32} : tensor<f32>`."""

    name = "torch.constant"
    assembly_format = "attr-dict `:` type($result)"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(
            properties={"value": FloatAttr(value, result_type.element_type)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        r = _tensor(self, self.result, "the result")
        if _shape(r) != ():
            raise VerifyException(f"{self.name}: expected a 0-d tensor, got {r}")


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """torch.matmul's result shape (1-D operands promoted and squeezed), or None."""
    if not a or not b:
        return None
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@irdl_op_definition
class MatmulOp(_TorchOp):
    """`torch.matmul %a, %b : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>`,
    with torch's 1-D promotion and batch broadcasting."""

    name = "torch.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b], result_types=[result_type])

    def verify_(self) -> None:
        a = _tensor(self, self.lhs, "the lhs")
        b = _tensor(self, self.rhs, "the rhs")
        r = _tensor(self, self.result, "the result")
        want = matmul_shape(_shape(a), _shape(b))
        if want is None:
            raise VerifyException(
                f"{self.name}: shapes {_shape(a)} and {_shape(b)} cannot be multiplied"
            )
        if want != _shape(r):
            raise VerifyException(f"{self.name}: expected result shape {want}, got {_shape(r)}")
        _same_element_type(self, a, b, r)


@irdl_op_definition
class RmsNormOp(_TorchOp):
    """`torch.rms_norm %x, %weight {normalized_shape = array<i64: 2048>, eps = 1.0e-06 : f64}`:
    x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight (aten.rms_norm).
    Without `eps`, torch uses the machine epsilon of the input dtype."""

    name = "torch.rms_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    result = result_def(TensorType)
    normalized_shape = prop_def(DenseArrayBase)
    eps = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())

    def __init__(self, x, weight, normalized_shape: Sequence[int], eps: float | None, result_type):
        props: dict[str, Attribute] = {
            "normalized_shape": DenseArrayBase.from_list(i64, list(normalized_shape))
        }
        if eps is not None:
            props["eps"] = FloatAttr(eps, 64)
        super().__init__(
            operands=[x, [weight] if weight is not None else []],
            result_types=[result_type],
            properties=props,
        )

    def verify_(self) -> None:
        x = _tensor(self, self.input, "the input")
        r = _tensor(self, self.result, "the result")
        norm = tuple(self.normalized_shape.get_values())
        if not norm or _shape(x)[-len(norm) :] != norm:
            raise VerifyException(
                f"{self.name}: normalized_shape {list(norm)} must be the trailing dims of "
                f"{list(_shape(x))}"
            )
        if self.weight is not None:
            w = _tensor(self, self.weight, "the weight")
            if _shape(w) != norm:
                raise VerifyException(
                    f"{self.name}: expected weight shape {list(norm)}, got {list(_shape(w))}"
                )
            _same_element_type(self, x, w)
        if _shape(r) != _shape(x):
            raise VerifyException(f"{self.name}: expected result shape {_shape(x)}, got {_shape(r)}")
        _same_element_type(self, x, r)


Torch = Dialect(
    "torch",
    [*UNARY_CLASSES.values(), *BINARY_CLASSES.values(), ConstantOp, MatmulOp, RmsNormOp],
    [],
)
