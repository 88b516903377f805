"""The ONNX importer on the example models and on small hand-made graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from telamalloc.dialects.dims import DIMS_ATTR
from telamalloc.dialects.scratchpad import AllocOp, DeallocOp, DmaOp, KernelOp
from telamalloc.importers.onnx_import import ImportOptions, OnnxImportError, import_onnx, load_model
from telamalloc.passes.tela_plan import collect_module, plan_module
from telamalloc.runtime.alloc.parametric import SymbolRange
from telamalloc.runtime.alloc.validate import compute_load
from telamalloc.runtime.interp import run_program
from telamalloc.verification import verify_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "onnx"


def _ops(module: ModuleOp, kind) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def _lifetimes(module: ModuleOp) -> dict[str, tuple[int, int, int]]:
    """Each buffer's own lifetime and size (inplace="none": in place, the default, a group
    of buffers sharing bytes is one buffer of the problem under its first member's id)."""
    problem = collect_module(module, capacity=1 << 30, inplace="none")[0].problem()
    return {b.id: (b.start, b.end, b.size) for b in problem.buffers}


# --------------------------------------------------------------------------------------
# The example models


@pytest.mark.parametrize(
    "name, nodes, views, buffers, loads",
    [
        # 3 x (MatMul, Add) + 2 Relu + Softmax = 9 nodes; x and 6 weights loaded; 9 results.
        ("mlp", 9, 0, 16, 7),
        # 2 x (Conv, Relu, MaxPool) + Flatten, MatMul, Add, Softmax = 10 nodes, 7 loads; the
        # Flatten is a view of the second pool's buffer: 9 results.
        ("cnn", 10, 1, 16, 7),
        # 18 nodes; x, 4 projections, scale, 2 x (gamma, beta), w1, b1, w2, b2 = 14 loads.
        ("transformer_block", 18, 0, 32, 14),
    ],
)
def test_example_models_import_with_expected_counts(model_files, name, nodes, views, buffers, loads):
    imported = import_onnx(model_files[name])
    module = imported.module
    module.verify()
    assert (imported.nodes, imported.views, imported.buffers, imported.loads, imported.stores) == (
        nodes, views, buffers, loads, 1)
    assert imported.planned_only == {}
    assert len(_ops(module, KernelOp)) == nodes - views
    assert len(_ops(module, AllocOp)) == buffers == len(_ops(module, DeallocOp))
    assert buffers == nodes - views + loads  # every kernel writes one tensor; every load fills one buffer
    assert len(_ops(module, DmaOp)) == loads + 1


def test_committed_example_files_match_their_builders(builders):
    for name, build in builders.MODELS.items():
        assert (EXAMPLES / f"{name}.onnx").read_bytes() == build().SerializeToString(), name


def test_mlp_lifetimes_follow_program_order(model_files):
    lifetimes = _lifetimes(import_onnx(model_files["mlp"]).module)
    # Program points: alloc x (0), dma (1), get_global w1 (2), alloc w1 (3), dma (4), alloc
    # mm1 (5), matmul (6), dealloc x (7): x lives from its first write to its last read,
    # the matmul, [1, 7) (its dealloc ends nothing), 8 x 32 f32 = 1024 bytes.
    assert lifetimes["x"] == (1, 7, 1024)
    # w1 (a memref.global: 8192 bytes) is loaded right before dense1 and last read by it:
    # [4, 7), 32 x 64 x 4.
    assert lifetimes["w1"] == (4, 7, 8192)
    # mm1 is written by dense1 and last read by bias1; b1 is loaded only then (at 11).
    assert lifetimes["mm1"][0] == 6 and lifetimes["b1"][0] == 11 and lifetimes["mm1"][1] > lifetimes["b1"][0]
    # w2 is loaded only after layer 1 is done: it never meets w1.
    assert lifetimes["w2"][0] >= lifetimes["w1"][1]
    # probs is the last buffer: moved out, then freed.
    assert lifetimes["probs"][1] == max(end for _, end, _ in lifetimes.values())


def test_transformer_lifetimes_keep_x_for_the_residual(model_files):
    lifetimes = _lifetimes(import_onnx(model_files["transformer_block"]).module)
    # x is read by the three projections and by the first residual Add.
    assert lifetimes["x"][1] > lifetimes["projected"][0]
    assert lifetimes["scale"][2] == 4  # a rank-0 f32 initializer
    assert lifetimes["scores"][2] == 16 * 16 * 4
    # the attention matrix dies once the context is computed; norm1 lives across the FFN.
    assert lifetimes["attention"][1] <= lifetimes["projected"][0]
    assert lifetimes["norm1"][1] > lifetimes["ffn_out"][0]


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer_block"])
def test_example_models_plan_at_capacity_load(model_files, name):
    module = import_onnx(model_files[name]).module
    load = compute_load(collect_module(module, capacity=1 << 30)[0].problem())[0]
    (plan,) = plan_module(module, capacity=load)
    assert plan.solution.ok and plan.solution.peak == load


def test_imported_mlp_runs_like_the_onnx_reference(model_files, builders):
    from onnx.reference import ReferenceEvaluator

    model = builders.mlp()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    module = import_onnx(model_files["mlp"]).module  # the weights are memref.globals
    inputs = [x, np.zeros((8, 10), np.float32)]
    result = run_program(module, inputs=inputs)
    probs = next(output.value for output in result.outputs if output.name == "%probs_out")
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)
    report = verify_program(module, inputs=inputs)  # planned and lowered: bit-identical outputs
    assert report.ok


@pytest.mark.parametrize("name, shape", [("cnn", (1, 3, 16, 16)), ("transformer_block", (16, 32))])
def test_imported_cnn_and_transformer_run_like_the_onnx_reference(model_files, builders, name, shape):
    """The cnn's Flatten (a view) and the transformer's LayerNormalization run too."""
    from onnx.reference import ReferenceEvaluator

    model = getattr(builders, name)()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (expected,) = ReferenceEvaluator(model).run(None, {model.graph.input[0].name: x})
    imported = import_onnx(model_files[name])
    inputs = [x, np.zeros(expected.shape, np.float32)]
    result = run_program(imported.module, inputs=inputs)
    np.testing.assert_allclose(result.outputs[-1].value, expected, rtol=1e-5, atol=1e-5)
    assert verify_program(imported.module, inputs=inputs).ok


# --------------------------------------------------------------------------------------
# Hand-made graphs


def _model(nodes, inputs, outputs, initializers=(), value_info=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers), value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _tensor(name, shape, element=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, element, shape)


def test_unmapped_attributes_and_unknown_ops_are_planned_as_opaque_kernels():
    model = _model(
        [
            helper.make_node("Conv", ["a", "w"], ["c"]),  # 1-D: not the 2-D conv2d kernel
            helper.make_node("MaxPool", ["c"], ["p", "indices"], kernel_shape=[2]),
            helper.make_node("Reshape", ["p", "shape"], ["r"]),  # the shape is no constant
            helper.make_node("Cast", ["indices"], ["d"], to=TensorProto.FLOAT),
        ],
        [_tensor("a", [1, 3, 8]), _tensor("w", [4, 3, 3]), _tensor("shape", [2], TensorProto.INT64)],
        [_tensor("r", [4, 5]), _tensor("d", [1, 4, 5])],
    )
    imported = import_onnx(model)
    imported.module.verify()
    assert imported.planned_only == {}  # each runs on ONNX's reference implementation
    assert {op: imported.runnable[op] for op in ("Cast", "Conv", "MaxPool", "Reshape")} == dict.fromkeys(
        ("Cast", "Conv", "MaxPool", "Reshape"), "onnx-reference")
    assert imported.reasons == {
        "Conv": "'conv2d' takes 4-D NCHW images (2-D windows) only",
        "MaxPool": "its output 'indices' is read, and the kernel computes the first output only",
        "Reshape": "its shape input is not a constant",
    }
    kernels = [op.kernel_name for op in _ops(imported.module, KernelOp)]
    assert kernels == ["onnx.Conv", "onnx.MaxPool", "onnx.Reshape", "onnx.Cast"]
    maxpool = _ops(imported.module, KernelOp)[1]
    assert dict(maxpool.params.data)["kernel_shape"].get_values() == (2,)
    assert len(maxpool.outs) == 2  # an opaque kernel writes every output that is used
    assert dict(maxpool.params.data)["onnx_opset"].value.data == 17 and "onnx_node" in maxpool.params.data
    shape_buffer = [op for op in _ops(imported.module, AllocOp) if op.memref.name_hint == "shape"]
    assert shape_buffer and shape_buffer[0].memref.type.element_type.width.data == 64


def test_a_node_whose_attributes_the_importer_cannot_read_is_named():
    model = _model([helper.make_node("LRN", ["x"], ["y"], name="norm1")], [_tensor("x", [1, 3, 4, 4])],
                   [_tensor("y", [1, 3, 4, 4])])  # LRN's size is required
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model)
    assert str(error.value) == (
        "node 'norm1' (LRN): the importer cannot read its attributes and inputs ('size'); "
        "check the node against the ONNX operator's specification"
    )


def test_mapped_kernels_carry_their_params():
    model = _model(
        [
            helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("MaxPool", ["y"], ["p"], kernel_shape=[2, 2]),  # ONNX stride default 1
            helper.make_node("ReduceSum", ["p", "axes"], ["s"], keepdims=0),
            helper.make_node("Transpose", ["s"], ["t"]),
        ],
        [_tensor("x", [1, 2, 8, 8]), _tensor("w", [4, 2, 3, 3])],
        [_tensor("t", None)],
        [numpy_helper.from_array(np.array([3], dtype=np.int64), "axes")],
    )
    imported = import_onnx(model)
    kernels = {op.kernel_name: {k: v for k, v in op.params.data.items()} for op in _ops(imported.module, KernelOp)}
    assert kernels["conv2d"]["stride"].value.data == 2 and kernels["conv2d"]["padding"].value.data == 1
    assert "dilation" not in kernels["conv2d"] and "groups" not in kernels["conv2d"]  # the defaults are left out
    assert kernels["maxpool2d"]["window"].value.data == 2 and kernels["maxpool2d"]["stride"].value.data == 1
    assert kernels["reduce-sum"]["axes"].get_values() == (3,)
    assert kernels["transpose"]["permutation"].get_values() == (2, 1, 0)
    assert imported.planned_only == {}
    # the axes initializer is read as a constant, never moved into the scratchpad
    assert "axes" not in {op.memref.name_hint for op in _ops(imported.module, AllocOp)}


def test_names_become_valid_unique_ssa_names():
    model = _model(
        [helper.make_node("Relu", ["in:0"], ["out_1"]), helper.make_node("Relu", ["out_1"], ["7"])],
        [_tensor("in:0", [4])],
        [_tensor("7", [4])],
    )
    module = import_onnx(model).module
    names = [op.memref.name_hint for op in _ops(module, AllocOp)]
    assert names == ["in.0", "out.1", "t7"]  # `_<digits>` would be dropped by xDSL: `.` instead
    assert [a.name_hint for a in module.ops.first.body.block.args] == ["in_0_in", "t7_out"]


def test_symbolic_dimensions_are_kept_with_a_range_or_fixed():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_tensor("x", ["batch", 4])], [_tensor("y", ["batch", 4])])
    with pytest.raises(OnnxImportError, match=r"the symbolic dimension 'batch' has no range; give it one with "
                       r"--dim batch=LO\.\.HI\[@HINT\]"):
        import_onnx(model, ImportOptions(default_range=None))
    imported = import_onnx(model, ImportOptions(dims={"batch": 3}))
    assert [op.memref.type.get_shape() for op in _ops(imported.module, AllocOp)] == [(3, 4), (3, 4)]
    assert import_onnx(model, ImportOptions(dims={"batch": SymbolRange(3, 3)})).module.is_structurally_equivalent(
        imported.module)
    kept = import_onnx(model, ImportOptions(dims={"batch": SymbolRange(1, 8, 4)})).module
    function = kept.ops.first
    assert [str(a) for a in function.function_type.inputs.data] == ["memref<?x4xf32>", "memref<?x4xf32>"]
    assert [a.data[DIMS_ATTR] for a in function.arg_attrs.data] == [
        ArrayAttr([StringAttr("batch=1..8@4")]), ArrayAttr([StringAttr("batch")])]
    assert _ops(kept, AllocOp) == []  # dynamic buffers are memref.allocs, sized from memref.dim
    default = import_onnx(model).module.ops.first
    assert default.arg_attrs.data[0].data[DIMS_ATTR] == ArrayAttr([StringAttr("batch=1..1024@64")])


def test_custom_ops_without_shapes_are_reported():
    model = _model(
        [helper.make_node("Foo", ["x"], ["y"], domain="com.example")],
        [_tensor("x", [4])],
        [_tensor("y", None)],
    )
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(OnnxImportError, match="tensor 'y' .* has no static shape"):
        import_onnx(model)
    model.graph.output[0].CopyFrom(_tensor("y", [4]))
    imported = import_onnx(model)
    assert imported.planned_only == {"com.example.Foo": 1}
    assert [op.kernel_name for op in _ops(imported.module, KernelOp)] == ["onnx.com.example.Foo"]


def test_capacity_adds_a_target(model_files):
    module = import_onnx(model_files["mlp"], ImportOptions(capacity=65536, alignment=32)).module
    target = module.attributes["scratchpad.target"]
    assert (target.capacity.data, target.alignment.data, target.target_name.data) == (65536, 32, "l1")


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_text("this is not a protobuf\n")
    message = f"{path}: not an ONNX model (the protobuf does not parse); export the model with onnx.save"
    for load in (import_onnx, load_model):
        with pytest.raises(OnnxImportError) as error:
            load(str(path))
        assert str(error.value) == message


def test_missing_file(tmp_path):
    path = tmp_path / "missing.onnx"
    with pytest.raises(OnnxImportError) as error:
        import_onnx(path)  # a Path works as well as a str
    assert str(error.value) == f"{path}: cannot read: No such file or directory"


def test_errors_about_a_file_name_it_once_and_in_memory_models_name_none(tmp_path):
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_tensor("x", ["n", 4])], [_tensor("y", ["n", 4])])
    path = tmp_path / "sym.onnx"
    onnx.save(model, path)
    message = "the symbolic dimension 'n' has no range; "
    options = ImportOptions(default_range=None)
    with pytest.raises(OnnxImportError) as from_memory:
        import_onnx(model, options)
    with pytest.raises(OnnxImportError) as from_file:
        import_onnx(str(path), options)
    assert str(from_memory.value).startswith(message)
    assert str(from_file.value) == f"{path}: {from_memory.value}"


@pytest.mark.parametrize("element_type", ["COMPLEX64", "COMPLEX128"])
def test_unsupported_element_types_are_named_and_the_supported_ones_listed(element_type):
    number = TensorProto.DataType.Value(element_type)
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [_tensor("x", [4], number)], [_tensor("y", [4], number)])
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model)
    message = str(error.value)
    assert message.startswith(f"tensor 'x' has unsupported element type '{element_type}'; the supported element types are 'FLOAT', ")
    assert message.endswith(": export the model with one of them") and f"'{number}'" not in message
    assert all(f"'{name}'" in message for name in ("BOOL", "BFLOAT16", "FLOAT8E4M3FN", "UINT4"))


def test_an_element_type_onnx_has_no_name_for_is_given_by_number():
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [_tensor("x", [4], 99)], [_tensor("y", [4], 99)])
    with pytest.raises(OnnxImportError, match="^tensor 'x' has unsupported element type '99'; the supported"):
        import_onnx(model)


def test_declared_types_are_checked_before_shape_inference():
    """A STRING input to Add: our message, not shape inference's type error."""
    string = TensorProto.STRING
    model = _model([helper.make_node("Add", ["x", "x"], ["y"])], [_tensor("x", [4], string)], [_tensor("y", [4], string)])
    with pytest.raises(OnnxImportError, match="^tensor 'x' has element type 'STRING', whose strings have no size"):
        import_onnx(model)


@pytest.mark.parametrize(
    "value, message",
    [
        (helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [4]),
         "input 'x' is a sequence: its length or presence is known only when the model runs, and a static plan needs "
         "it at import; pass its tensors as separate inputs or give its tensors' shapes (--sequence-input NAME=SHAPE,SHAPE,...)"),
        (helper.make_sparse_tensor_value_info("x", TensorProto.FLOAT, [4]),
         "value 'x' is of type 'sparse tensor', not a dense tensor; the importer plans dense tensors only: export the "
         "model without sequence, map, optional or sparse values"),
        (helper.make_value_info("x", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [4]))),
         "input 'x' is an optional: its length or presence is known only when the model runs, and a static plan needs "
         "it at import; pass its tensors as separate inputs"),
    ],
)
def test_values_that_are_not_dense_tensors_are_named(value, message):
    model = _model([helper.make_node("Identity", ["x"], ["y"])], [value], [_tensor("y", [4])])
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "dims, message",
    [
        ({"batc": 1}, "--dim 'batc' names no symbolic dimension of the model's inputs (did you mean 'batch'?); its symbolic dimensions are 'batch', 'seq'"),
        ({"batch": 1, "a": 2, "b": 3}, "--dim 'a', 'b' name no symbolic dimension of the model's inputs; its symbolic dimensions are 'batch', 'seq'"),
    ],
)
def test_unknown_dims_are_errors_that_list_the_symbolic_dimensions(dims, message):
    model = _model(
        [helper.make_node("Add", ["x", "z"], ["y"])],
        [_tensor("x", ["batch", "seq"]), _tensor("z", ["batch", 1])],
        [_tensor("y", ["batch", "seq"])],
    )
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model, ImportOptions(dims=dims))
    assert str(error.value) == message
    imported = import_onnx(model, ImportOptions(dims={"batch": 2, "seq": 3}))
    assert [op.memref.type.get_shape() for op in _ops(imported.module, AllocOp)] == [(2, 3), (2, 1), (2, 3)]


def test_unknown_dims_of_a_model_without_symbolic_dimensions():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_tensor("x", [4])], [_tensor("y", [4])])
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model, ImportOptions(dims={"n": 1}))
    assert str(error.value) == (
        "--dim 'n' names no symbolic dimension of the model's inputs; there are none, so drop the option"
    )


def test_a_cycle_is_reported():
    model = _model(
        [helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2")],
        [_tensor("x", [4])],
        [_tensor("b", [4])],
    )
    with pytest.raises(OnnxImportError, match="^the graph has a cycle through node 'r1'; an ONNX graph must be acyclic"):
        import_onnx(model)


def test_shape_inference_errors_are_one_line():
    model = _model(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        [_tensor("a", [2, 3]), _tensor("b", [4, 5])],
        [_tensor("c", [2, 5])],
    )
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model)
    message = str(error.value)
    assert message.startswith("ONNX shape inference failed:") and "\n" not in message
    assert message.endswith("; fix the model until onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True) accepts it")


def test_undefined_tensors_are_reported():
    model = _model([helper.make_node("Relu", ["ghost"], ["y"], name="r")], [_tensor("x", [4])], [_tensor("y", [4])])
    with pytest.raises(OnnxImportError, match="node 'r' \\(Relu\\) reads 'ghost', which is no input"):
        import_onnx(model)

# The real architectures of the onnx package (light models, backend test models): see
# test_real_models.py.


# --------------------------------------------------------------------------------------
# Constants: folded subgraphs and values carried as memref.globals


def _folded_weight_model():
    """y = x @ reshape(ConstantOfShape([12]) * 0.5 + w, [4, 3]): the weight is a folded subgraph."""
    shape = numpy_helper.from_array(np.array([12], dtype=np.int64), "shape")
    target = numpy_helper.from_array(np.array([4, 3], dtype=np.int64), "target")
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32), "w")
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["half"],
                         value=numpy_helper.from_array(np.array([0.5], dtype=np.float32))),
        helper.make_node("Add", ["half", "w"], ["flat"]),
        helper.make_node("Reshape", ["flat", "target"], ["weight"]),
        helper.make_node("MatMul", ["x", "weight"], ["y"]),
    ]
    return _model(nodes, [_tensor("x", [2, 4])], [_tensor("y", [2, 3])], [shape, target, w])


def test_constant_foldable_subgraphs_are_constants_with_their_values():
    from onnx.reference import ReferenceEvaluator

    model = _folded_weight_model()
    imported = import_onnx(model)
    assert (imported.nodes, imported.folded, imported.globals, imported.constant_arguments) == (1, 3, 1, 0)
    assert [kernel.kernel_name for kernel in _ops(imported.module, KernelOp)] == ["matmul"]
    assert imported.arguments == (("x", "in"), ("y", "out"))
    (value,) = [op for op in imported.module.walk() if op.name == "memref.global"]
    assert value.sym_name.data == "weight_value"
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    result = run_program(imported.module, inputs=[x, np.zeros((2, 3), np.float32)])
    np.testing.assert_array_equal(next(o.value for o in result.outputs if o.name == "%y_out"), expected)


def test_constants_above_the_global_limit_are_arguments():
    imported = import_onnx(_folded_weight_model(), ImportOptions(max_global_bytes=47))  # the weight is 48 bytes
    assert (imported.globals, imported.constant_arguments) == (0, 1)
    assert imported.arguments == (("x", "in"), ("weight", "in"), ("y", "out"))
    assert not [op for op in imported.module.walk() if op.name == "memref.global"]


def test_random_nodes_are_not_folded():
    nodes = [
        helper.make_node("RandomNormal", [], ["noise"], shape=[4]),
        helper.make_node("Add", ["x", "noise"], ["y"]),
    ]
    imported = import_onnx(_model(nodes, [_tensor("x", [4])], [_tensor("y", [4])]))
    assert imported.folded == 0 and imported.nodes == 2


def _exported_view(batch="b", seq="s"):
    """`x.view(b, s, h, d)` as torch.onnx.export writes it: the sizes read by Shape -> Gather
    -> Unsqueeze, joined by Concat with the constant head sizes, into Reshape."""
    def const(name, values):
        dims = [len(values)] if isinstance(values, list) else []
        data = values if isinstance(values, list) else [values]
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, dims, data))
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        const("zero", 0), const("one", 1), const("axes", [0]), const("heads", [2, 4]),
        helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
        helper.make_node("Unsqueeze", ["s", "axes"], ["s1"]),
        helper.make_node("Concat", ["b1", "s1", "heads"], ["view"], axis=0),
        helper.make_node("Reshape", ["x", "view"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3]),
    ]
    graph = helper.make_graph(nodes, "exported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2, seq, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_exported_view_gets_its_shape_from_the_folded_shape_subgraph():
    from onnx.reference import ReferenceEvaluator

    model = _exported_view()
    imported = import_onnx(model, ImportOptions(dims={"b": 3, "s": 5}))
    assert imported.planned_only == {} and imported.runnable["Reshape"] == "view"
    assert imported.folded >= 6  # Shape, the Gathers, Unsqueezes and Concat became one constant
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    report = verify_program(imported.module, inputs=[x, np.zeros((3, 2, 5, 4), np.float32)])
    assert report.ok, "\n".join(report.lines())
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    (written,) = [output.value for output in report.values if output.value.shape == (3, 2, 5, 4)]
    assert np.array_equal(written, expected)


def test_an_imported_concat_plans_its_parts_into_their_slices_by_default(tmp_path):
    # As tela-import then tela-plan: the Relu's and the Sigmoid's outputs die at the Concat
    # (axis 1 of 1xCxHxW: each slice is one range of bytes), so with the default rule each
    # is placed in its slice of the result (1 KiB apart), and x, which the Sigmoid writes
    # over in place, with b: the block needs the result's 2 KiB. `inplace=elementwise`
    # keeps the parts apart (a, b and y at the Concat: 4 KiB). Both verify by execution.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    path = tmp_path / "block.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "block", [x], [y]), opset_imports=[helper.make_opsetid("", 13)]),
              str(path))
    module = import_onnx(str(path)).module
    (plan,) = plan_module(module, mode="minimize")
    offsets = {op.results[0].name_hint: op.offset.value.data for op in module.walk() if isinstance(op, AllocOp)}
    assert offsets["a"] == offsets["y"] and offsets["b"] == offsets["y"] + 1024, offsets
    assert offsets["x"] == offsets["b"] and plan.solution.load == plan.solution.peak == 2048
    (apart,) = plan_module(import_onnx(str(path)).module, mode="minimize", inplace="elementwise")
    assert apart.solution.load == 4096
    for rule in ("concat", "elementwise"):
        report = verify_program(import_onnx(str(path)).module, inplace=rule)
        assert report.ok, report.lines()
