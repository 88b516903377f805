"""Every operator the importer maps, on a small model built with the onnx helper API.

Each case is imported, run on the reference interpreter and compared with ONNX's own
reference evaluator (`onnx.reference`) within the tolerance stated per operator (0: the
same values; the kernels compute in float64 and round once, where the reference computes
in float32 with numpy and BLAS), then planned, lowered and run again: the outputs before
and after planning must be bit-identical (`verify_program`). docs/tools/tela-import.md's
operator table states the same tolerances (`test_the_docs_table_states_these_tolerances`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.dialects.scratchpad import AllocOp, KernelOp  # noqa: E402
from telamalloc.importers.onnx_import import import_onnx  # noqa: E402
from telamalloc.importers.onnx_ops import MAPPERS  # noqa: E402
from telamalloc.runtime.interp import run_program  # noqa: E402
from telamalloc.verification import verify_program  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools" / "tela-import.md"


@dataclass(frozen=True)
class Case:
    op: str  # the ONNX operator under test
    nodes: list
    inputs: dict[str, np.ndarray]  # graph inputs (main-memory arguments)
    output_shape: tuple[int, ...]
    rtol: float = 0.0  # against onnx.reference; 0 and 0: equal values
    atol: float = 0.0
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 17
    kernel: str | None = None  # the kernel expected (None: a view, no kernel)
    id: str = ""
    # the ONNX specification's formula where onnx.reference departs from it (else None)
    specification: Callable[..., np.ndarray] | None = None


RNG = np.random.default_rng(43)


def _x(*shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return RNG.uniform(low, high, shape).astype(np.float32)


def _node(op: str, ins: list[str], **attributes):
    return helper.make_node(op, ins, ["y"], name=f"{op.lower()}_node", **attributes)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)



def _batch_norm_at_inference(x, s, b, m, v, epsilon=1e-5):
    """BatchNormalization-9 with one output is inference (onnx.reference applies its momentum)."""
    shape = (1, -1, 1, 1)
    return s.reshape(shape) * (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + epsilon) + b.reshape(shape)


def _softmax_coerced_to_2d(x, axis=1):
    """Softmax before opset 13: over the axes from `axis` on together (onnx.reference uses `axis` alone)."""
    rows = x.reshape(x.shape[:axis] + (-1,)).astype(np.float64)
    e = np.exp(rows - rows.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).reshape(x.shape).astype(np.float32)


ELEMENTARY = {"rtol": 1e-6, "atol": 1e-7}  # libm-class functions: numpy's float32 vs float64 rounded once
SUMS = {"rtol": 1e-5, "atol": 1e-6}  # float32 BLAS / pairwise sums vs float64 in order, rounded once

CASES = [
    Case("Add", [_node("Add", ["a", "b"])], {"a": _x(3, 4), "b": _x(4)}, (3, 4), kernel="add"),
    Case("Sub", [_node("Sub", ["a", "b"])], {"a": _x(3, 4), "b": _x(3, 1)}, (3, 4), kernel="sub"),
    Case("Mul", [_node("Mul", ["a", "b"])], {"a": _x(2, 3, 4), "b": _x(3, 4)}, (2, 3, 4), kernel="mul"),
    Case("Div", [_node("Div", ["a", "b"])], {"a": _x(3, 4), "b": _x(3, 4, low=0.5)}, (3, 4), kernel="div"),
    Case("Pow", [_node("Pow", ["a", "b"])], {"a": _x(3, 4, low=0.1), "b": _x(3, 4)}, (3, 4), kernel="pow", **ELEMENTARY),
    Case("Sum", [_node("Sum", ["a", "b", "c"])], {"a": _x(2, 5), "b": _x(5), "c": _x(2, 1)}, (2, 5), kernel="add"),
    Case("Sum", [_node("Sum", ["a"])], {"a": _x(2, 5)}, (2, 5), id="one-input-view"),
    Case("Max", [_node("Max", ["a", "b", "c"])], {"a": _x(2, 5), "b": _x(2, 5), "c": _x(5)}, (2, 5), kernel="max"),
    Case("Min", [_node("Min", ["a", "b"])], {"a": _x(2, 5), "b": _x(2, 5)}, (2, 5), kernel="min"),
    Case("Relu", [_node("Relu", ["a"])], {"a": _x(4, 4)}, (4, 4), kernel="relu"),
    Case("Neg", [_node("Neg", ["a"])], {"a": _x(4, 4)}, (4, 4), kernel="neg"),
    Case("Abs", [_node("Abs", ["a"])], {"a": _x(4, 4)}, (4, 4), kernel="abs"),
    Case("Sqrt", [_node("Sqrt", ["a"])], {"a": _x(4, 4, low=0.0)}, (4, 4), kernel="sqrt"),
    Case("Exp", [_node("Exp", ["a"])], {"a": _x(4, 8, low=-8, high=8)}, (4, 8), kernel="exp", **ELEMENTARY),
    Case("Log", [_node("Log", ["a"])], {"a": _x(4, 8, low=0.01, high=50)}, (4, 8), kernel="log", **ELEMENTARY),
    Case("Tanh", [_node("Tanh", ["a"])], {"a": _x(4, 8, low=-5, high=5)}, (4, 8), kernel="tanh", **ELEMENTARY),
    Case("Sigmoid", [_node("Sigmoid", ["a"])], {"a": _x(4, 8, low=-9, high=9)}, (4, 8), kernel="sigmoid", **ELEMENTARY),
    Case("Erf", [_node("Erf", ["a"])], {"a": _x(4, 8, low=-3, high=3)}, (4, 8), kernel="erf", **ELEMENTARY),
    Case("LeakyRelu", [_node("LeakyRelu", ["a"], alpha=0.2)], {"a": _x(4, 4)}, (4, 4), kernel="leaky-relu"),
    Case("Clip", [_node("Clip", ["a", "lo", "hi"])], {"a": _x(4, 4)}, (4, 4), kernel="clip",
         initializers={"lo": np.array(-0.5, np.float32), "hi": np.array(1.0, np.float32)}),
    Case("Clip", [_node("Clip", ["a"], min=-0.5, max=1.0)], {"a": _x(4, 4)}, (4, 4), kernel="clip", opset=9,
         id="opset-9-attributes"),
    Case("MatMul", [_node("MatMul", ["a", "b"])], {"a": _x(5, 7), "b": _x(7, 3)}, (5, 3), kernel="matmul", **SUMS),
    Case("MatMul", [_node("MatMul", ["a", "b"])], {"a": _x(2, 5, 7), "b": _x(7, 3)}, (2, 5, 3), kernel="matmul",
         id="batched", **SUMS),
    Case("MatMul", [_node("MatMul", ["a", "b"])], {"a": _x(7), "b": _x(2, 7, 3)}, (2, 3), kernel="matmul",
         id="vector", **SUMS),
    Case("Gemm", [_node("Gemm", ["a", "b", "c"], transB=1, alpha=0.5, beta=2.0)], {"a": _x(4, 6)}, (4, 3),
         kernel="gemm", initializers={"b": _x(3, 6), "c": _x(3)}, **SUMS),
    Case("Gemm", [_node("Gemm", ["a", "b", "c"], transA=1)], {"a": _x(6, 4), "b": _x(6, 3), "c": _x(1, 3)}, (4, 3),
         kernel="gemm", opset=9, id="opset-9-trans-a", **SUMS),
    Case("Conv", [_node("Conv", ["x", "w", "b"], pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2])],
         {"x": _x(1, 3, 9, 8)}, (1, 4, 5, 7), kernel="conv2d", initializers={"w": _x(4, 3, 3, 2), "b": _x(4)}, **SUMS),
    Case("Conv", [_node("Conv", ["x", "w"], group=3, auto_pad="SAME_UPPER", strides=[2, 2])],
         {"x": _x(2, 6, 7, 7)}, (2, 6, 4, 4), kernel="conv2d", initializers={"w": _x(6, 2, 3, 3)}, id="groups-same",
         **SUMS),
    Case("MaxPool", [_node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
         {"x": _x(1, 2, 8, 8)}, (1, 2, 4, 4), kernel="maxpool2d"),
    Case("MaxPool", [_node("MaxPool", ["x"], kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)],
         {"x": _x(1, 2, 7, 8)}, (1, 2, 4, 4), kernel="maxpool2d", id="ceil-mode"),
    Case("MaxPool", [_node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])],
         {"x": _x(1, 2, 13, 13)}, (1, 2, 6, 6), kernel="maxpool2d", opset=9, id="opset-9-pads"),
    Case("AveragePool", [_node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
         {"x": _x(1, 2, 9, 9)}, (1, 2, 5, 5), kernel="avgpool2d", **SUMS),
    Case("AveragePool", [_node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                               count_include_pad=1, ceil_mode=1)],
         {"x": _x(1, 2, 8, 8)}, (1, 2, 5, 5), kernel="avgpool2d", id="include-pad-ceil", **SUMS),
    Case("GlobalAveragePool", [_node("GlobalAveragePool", ["x"])], {"x": _x(2, 3, 5, 4)}, (2, 3, 1, 1),
         kernel="reduce-mean", **SUMS),
    Case("GlobalMaxPool", [_node("GlobalMaxPool", ["x"])], {"x": _x(2, 3, 5, 4)}, (2, 3, 1, 1), kernel="maxpool2d"),
    Case("BatchNormalization", [_node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)],
         {"x": _x(2, 3, 4, 4)}, (2, 3, 4, 4), kernel="batch-norm",
         initializers={"s": _x(3), "b": _x(3), "m": _x(3), "v": _x(3, low=0.1)}, **SUMS),
    Case("BatchNormalization", [_node("BatchNormalization", ["x", "s", "b", "m", "v"])],
         {"x": _x(1, 4, 3, 3)}, (1, 4, 3, 3), kernel="batch-norm", opset=9, id="opset-9",
         initializers={"s": _x(4), "b": _x(4), "m": _x(4), "v": _x(4, low=0.1)}, specification=_batch_norm_at_inference,
         **SUMS),
    # onnx.reference's LRN loops its channel index over the batch axis: right only when N == C
    Case("LRN", [_node("LRN", ["x"], size=3, alpha=0.2, beta=0.75, bias=1.5)], {"x": _x(4, 4, 3, 3)}, (4, 4, 3, 3),
         kernel="lrn", **SUMS),
    Case("LayerNormalization", [_node("LayerNormalization", ["x", "s", "b"], axis=-2, epsilon=1e-4)],
         {"x": _x(2, 3, 8)}, (2, 3, 8), kernel="layer-norm", initializers={"s": _x(3, 8), "b": _x(8)}, **SUMS),
    Case("Softmax", [_node("Softmax", ["x"], axis=1)], {"x": _x(2, 5, 3, low=-6, high=6)}, (2, 5, 3),
         kernel="softmax", **ELEMENTARY),
    Case("Softmax", [_node("Softmax", ["x"])], {"x": _x(2, 5, 3, low=-6, high=6)}, (2, 5, 3), kernel="softmax",
         opset=9, id="opset-9-trailing-axes", specification=_softmax_coerced_to_2d, **ELEMENTARY),
    Case("Concat", [_node("Concat", ["a", "b", "c"], axis=1)], {"a": _x(2, 1, 3), "b": _x(2, 4, 3), "c": _x(2, 2, 3)},
         (2, 7, 3), kernel="concat"),
    Case("Transpose", [_node("Transpose", ["a"], perm=[2, 0, 1])], {"a": _x(2, 3, 4)}, (4, 2, 3), kernel="transpose"),
    Case("ReduceSum", [_node("ReduceSum", ["a", "axes"], keepdims=0)], {"a": _x(3, 4, 5)}, (4,), kernel="reduce-sum",
         initializers={"axes": _i64(0, 2)}, **SUMS),
    Case("ReduceSum", [_node("ReduceSum", ["a"], noop_with_empty_axes=1)], {"a": _x(3, 4)}, (3, 4), id="noop-view",
         **SUMS),
    Case("ReduceMean", [_node("ReduceMean", ["a"], axes=[-1])], {"a": _x(3, 4, 5)}, (3, 4, 1), kernel="reduce-mean",
         **SUMS),
    Case("Reshape", [_node("Reshape", ["a", "shape"])], {"a": _x(2, 3, 4)}, (3, 8), initializers={"shape": _i64(3, -1)}),
    Case("Flatten", [_node("Flatten", ["a"], axis=2)], {"a": _x(2, 3, 4, 5)}, (6, 20)),
    Case("Squeeze", [_node("Squeeze", ["a", "axes"])], {"a": _x(1, 3, 1, 4)}, (3, 4), initializers={"axes": _i64(0, 2)}),
    Case("Unsqueeze", [_node("Unsqueeze", ["a", "axes"])], {"a": _x(3, 4)}, (1, 3, 4, 1),
         initializers={"axes": _i64(0, 3)}),
    Case("Identity", [_node("Identity", ["a"])], {"a": _x(3, 4)}, (3, 4)),
    Case("Dropout", [helper.make_node("Dropout", ["a"], ["y", "mask"])], {"a": _x(3, 4)}, (3, 4)),
    Case("Dropout", [helper.make_node("Dropout", ["a"], ["y", "mask"], ratio=0.5)], {"a": _x(3, 4)}, (3, 4), opset=9,
         id="opset-9"),
    Case("Constant", [_node("Constant", [], value=numpy_helper.from_array(np.full((2, 3), 1.5, np.float32)))], {},
         (2, 3), id="folded"),
]


def _model(case: Case):
    value_infos = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(value.shape))
                   for name, value in case.inputs.items()]
    initializers = [numpy_helper.from_array(value, name) for name, value in case.initializers.items()]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(case.output_shape))
    graph = helper.make_graph(case.nodes, case.op.lower(), value_infos, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8 if case.opset > 9 else 4
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("case", CASES, ids=[f"{case.op}-{case.id}" if case.id else case.op for case in CASES])
def test_operator_runs_like_onnx_reference_and_verifies(case: Case) -> None:
    model = _model(case)
    if case.specification is None:
        expected = ReferenceEvaluator(model).run(None, dict(case.inputs))[0]
    else:
        expected = case.specification(*case.inputs.values(), *case.initializers.values())
    imported = import_onnx(model)
    imported.module.verify()
    assert imported.planned_only == {}, imported.reasons
    kernels = [op.kernel_name for op in imported.module.walk() if isinstance(op, KernelOp)]
    assert kernels == ([case.kernel] if case.kernel else []), kernels
    arguments = [case.inputs[name] if direction == "in" else np.zeros(case.output_shape, np.float32)
                 for name, direction in imported.arguments]
    result = run_program(imported.module, inputs=arguments)
    (output,) = [output.value for output in result.outputs if output.name == "%y_out"]
    assert output.shape == case.output_shape
    if case.rtol == case.atol == 0:
        np.testing.assert_array_equal(output, expected)
    else:
        np.testing.assert_allclose(output, expected, rtol=case.rtol, atol=case.atol)
    report = verify_program(imported.module, inputs=arguments)
    assert report.ok, report


def test_every_mapped_operator_has_a_case():
    assert {case.op for case in CASES} == set(MAPPERS)


def test_the_docs_table_states_these_tolerances():
    """docs/tools/tela-import.md: one row per operator, its tolerance as the cases use it."""
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            for op in re.findall(r"`(\w+)`", cells[0]):
                rows[op] = cells[4]
    assert set(rows) == set(MAPPERS), set(MAPPERS) ^ set(rows)
    for case in CASES:
        stated = "exact" if case.rtol == case.atol == 0 else f"rtol {case.rtol:g}, atol {case.atol:g}"
        assert rows[case.op] == stated, f"{case.op}: the docs say {rows[case.op]!r}, the test uses {stated!r}"


# --------------------------------------------------------------------------------------
# Views: no copy, the source's buffer read with another shape


def _view_module(source_shape, target_shape):
    case = Case("Reshape", [_node("Reshape", ["a", "shape"]), helper.make_node("Relu", ["y"], ["z"])],
                {"a": _x(*source_shape)}, tuple(target_shape), initializers={"shape": _i64(*target_shape)})
    model = _model(case)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("z", TensorProto.FLOAT, list(target_shape)))
    return import_onnx(model), case


@pytest.mark.parametrize(
    "source, target, ops",
    [
        ((2, 3, 4), (6, 4), ["memref.collapse_shape"]),
        ((1, 2, 3, 1), (6,), ["memref.collapse_shape"]),
        ((6, 4), (2, 3, 2, 2), ["memref.expand_shape"]),
        ((2, 3), (3, 2), ["memref.collapse_shape", "memref.expand_shape"]),  # through 1-D
        ((4, 6), (8, 3), ["memref.collapse_shape", "memref.expand_shape"]),
        ((1, 1), (), ["memref.collapse_shape"]),
        ((), (1, 1), ["memref.expand_shape"]),
    ],
)
def test_reshape_is_a_view_without_a_copy(source, target, ops):
    imported, case = _view_module(source, target)
    module = imported.module
    module.verify()
    assert [op.name for op in module.walk() if op.name.startswith("memref.") and "shape" in op.name] == ops
    assert imported.views == 1 and imported.buffers == 2  # the input and the relu's output
    assert [op.memref.name_hint for op in module.walk() if isinstance(op, AllocOp)] == ["a", "z"]
    x = case.inputs["a"]
    arguments = [x, np.zeros(target, np.float32)]
    result = run_program(module, inputs=arguments)
    np.testing.assert_array_equal(result.outputs[-1].value, np.maximum(x.reshape(target), 0))
    assert verify_program(module, inputs=arguments).ok


def test_a_view_keeps_its_source_alive_until_its_last_reader():
    """a -> Reshape -> b; relu(a) then matmul(b): a is freed only after the matmul reads b."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["b"]),
        helper.make_node("Relu", ["a"], ["c"]),
        helper.make_node("MatMul", ["b", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2]), helper.make_tensor_value_info("c", TensorProto.FLOAT, [2, 6])],
        [numpy_helper.from_array(_i64(3, 4), "shape"), numpy_helper.from_array(_x(4, 2), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    imported = import_onnx(model)
    ops = [op for op in imported.module.walk() if op.name in ("scratchpad.dealloc", "scratchpad.kernel")]
    order = [op.kernel_name if isinstance(op, KernelOp) else f"free {op.operands[0].name_hint}" for op in ops]
    assert order.index("free a") > order.index("matmul")
    x = _x(2, 6)
    arguments = [x, np.zeros((3, 2), np.float32), np.zeros((2, 6), np.float32)]
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    result = {output.name: output.value for output in run_program(imported.module, inputs=arguments).outputs}
    np.testing.assert_allclose(result["%y_out"], expected[0], rtol=1e-5, atol=1e-6)
    assert verify_program(imported.module, inputs=arguments).ok


@pytest.mark.parametrize(
    "opset, node, reason",
    [
        (6, helper.make_node("Dropout", ["a"], ["y"]), "a view passes its input through at inference only"),
        (6, helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["y"]),
         "'batch-norm' normalizes floating-point tensors at inference only"),
        (7, helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["y"], spatial=0),
         "'batch-norm' normalizes per channel (spatial 1) only"),
        (15, helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["y", "mean", "var"], training_mode=1),
         "'batch-norm' normalizes floating-point tensors at inference only"),
    ],
)
def test_training_mode_nodes_are_planned_but_not_mapped(opset, node, reason):
    """Before opset 7 Dropout and BatchNormalization train unless is_test says otherwise."""
    channels = {name: _x(3) for name in "sbm"} | {"v": _x(3, low=0.1)}
    initializers = {name: value for name, value in channels.items() if name in node.input}
    case = Case(node.op_type, [node], {"a": _x(2, 3, 4, 4)}, (2, 3, 4, 4), initializers=initializers, opset=opset)
    model = _model(case)
    imported = import_onnx(model)
    assert imported.reasons == {node.op_type: reason}
    if node.op_type == "Dropout":  # training without a seed: its mask is random, not run by the reference either
        assert imported.planned_only == {"Dropout": 1}
    else:
        assert imported.planned_only == {} and imported.runnable == {node.op_type: "onnx-reference"}
