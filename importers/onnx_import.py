"""ONNX models in: every intermediate tensor a scratchpad buffer, every node a kernel or a view.

`import_onnx(model)` turns an ONNX graph (the `onnx` package, with its shape inference)
into one `func.func` of the scratchpad dialect, ready for the usual pipeline
(`tela-opt model.mlir -p 'tela-pipeline{capacity=...}'`). The work is split by concern:

- here: reading the model, binding symbolic dimensions, shape inference, constant folding;
- `onnx_graph`: the error, element and tensor types, the facts nodes are mapped with;
- `onnx_ops`: the op table, which node becomes which interpreter kernel or a view
  (its docstring lists the operators and when each one maps);
- `onnx_emit`: the function: arguments, globals, DMAs, allocations, views, deallocs.

Constants are the initializers (weights) and the outputs of constant-foldable subgraphs:
nodes that read only constants (`Constant`, `ConstantOfShape` of a constant shape, a
`Reshape` of a weight, ...; deterministic default-domain ops without subgraphs). They are
not kernels: like initializers they stay in main memory. A constant of at most
`ImportOptions.max_global_bytes` (64 KiB by default) whose value is known (an initializer,
or a folded output that ONNX's reference evaluator computes from such small tensors) is
carried with its value as a `memref.global`, so a model's small weights travel in the IR
and `tela-run` computes the model's real outputs. Larger constants are function
arguments: their values would make the text IR huge (vgg19's 411 MB fc6 weight would be a
gigabyte of hex) and a compiler hands weights over as buffers anyway.

Every node is mapped in a topological order of the graph (the file's order wherever it
is one). A node the op table does not map is still planned: it becomes
`scratchpad.kernel "onnx.<OpType>"` with its scalar and list attributes as params, and the
node itself for ONNX's reference implementation, which the interpreter runs (`runnable`
shows `onnx-reference`; also `ai.onnx.ml`, `ai.onnx.preview(.training)` ops the reference
implements, and operators ONNX defines as functions of others); nodes the reference
cannot run alone (other domains, subgraphs reading the outer scope,
random ops) the interpreter cannot run, and `ImportedModel.planned_only` lists them per op type.

Symbolic input dimensions (ONNX `dim_param`s) are kept unless `dims` fixes them
(`{"batch": 1}`): with a range from `dims` (`{"seq": SymbolRange(1, 2048, 512)}`), else
`ImportOptions.default_range` (1..1024, optimized at 64), the function's arguments have a
`?` there named after the `dim_param` (`scratchpad.dims`), every tensor's shape is an
expression of them (`onnx_shapes`, `onnx_symbolic`) and the buffers are `memref.alloc`s
sized with `memref.dim` and `arith` (`onnx_sizes`), which `tela-plan` plans
parametrically. A name in `dims` that is no symbolic dimension of an input is an error,
not ignored.

Limits: shapes must be static after shape inference where no kept dimension decides them;
a graph output's dimension must be an input dimension or a constant (the arguments are
sized by the input dimensions); sequences and optionals built in the graph with constant
positions are resolved at import into lists of tensors (`onnx_sequences`), other
sequence, optional, map and sparse values are rejected; a `Gradient` node
(`ai.onnx.preview.training`) is resolved at import into its reverse-mode pass
(`onnx_gradient`);
subgraphs (If, Loop, Scan bodies) are not opened: such a node is one opaque kernel whose
inner tensors are not planned. A Constant node whose output shape inference leaves open is not folded; if it
fills its output with one value it becomes `fill`, else an opaque `onnx.Constant` kernel.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from telamalloc.dialects.scratchpad_types import TARGET_ATTR_KEY, TargetAttr
from telamalloc.extras import install_hint
from telamalloc.importers.onnx_emit import emit
from telamalloc.importers.onnx_gradient import resolve_gradients
from telamalloc.importers.onnx_graph import (
    Graph,
    OnnxImportError,
    Tensor,
    narrow_element_types,
    node_label,
    outer_scope_reads,
    tensor_types,
)
from telamalloc.importers.onnx_ops import MAPPERS, Kernel, Mapped, NotMapped, View, inputs, map_node, opaque
from telamalloc.importers.onnx_sequences import resolve_sequences
from telamalloc.importers.onnx_symbolic import SymbolicModel, fixed_values, keep_symbols
from telamalloc.runtime.alloc.parametric import SymbolRange, check_dimension_names


@contextlib.contextmanager
def _about(path: str) -> Iterator[None]:
    """Prefix every OnnxImportError raised inside with `path: ` (the one place that does)."""
    try:
        yield
    except OnnxImportError as error:
        raise OnnxImportError(f"{path}: {error}") from None


DEFAULT_RANGE = SymbolRange(1, 1024, 64)
"""The range of a symbolic dimension kept without one (`tela-import` without `--dim` for it):
ONNX declares no bounds, so a generous one; the hint 64 is also the size `tela-run` gives
the dimension without `--dim`, which keeps such a run small (at the upper end, an attention
model's scores alone would be 4 GiB)."""


@dataclass(frozen=True)
class ImportOptions:
    function: str = "main"  # the name of the generated func.func
    capacity: int | None = None  # bytes: adds a #scratchpad.target to the module when given
    alignment: int = 64  # the target's default alignment (only with a capacity)
    target_name: str = "l1"
    # symbolic input dimensions: a value fixes one (shapes become static), a range keeps it
    # symbolic (`--dim seq=1..2048@512`); one given neither takes `default_range`
    dims: Mapping[str, int | SymbolRange] = field(default_factory=dict)
    default_range: SymbolRange | None = DEFAULT_RANGE  # None: a kept dimension needs a range in `dims`
    max_global_bytes: int = 65536  # constants up to this size become memref.globals with their values
    # a sequence input's tensors' shapes: it becomes one input per tensor, NAME.0, NAME.1, ...
    sequence_inputs: Mapping[str, Sequence[Sequence[int]]] = field(default_factory=dict)
    # the bytes of each string of a STRING tensor (UTF-8, NUL-padded; `runtime/interp/strings.py`);
    # None: STRING tensors are refused (a string has no size a static plan can know)
    string_width: int | None = None


@dataclass(frozen=True)
class ImportedModel:
    module: ModuleOp
    nodes: int  # ONNX nodes imported (not folded): kernels and views
    buffers: int  # scratchpad allocations
    loads: int  # dma into the scratchpad (inputs and initializers)
    stores: int  # dma out of the scratchpad (outputs)
    runnable: dict[str, str]  # ONNX op type -> interpreter kernel (or "view"), for the mapped op types
    planned_only: dict[str, int]  # ONNX op type -> nodes the interpreter cannot run
    reasons: dict[str, str]  # ONNX op type -> why a known op type was not mapped (first seen)
    folded: int = 0  # nodes of constant-foldable subgraphs (their outputs are constants)
    globals: int = 0  # constants carried with their values (memref.global)
    constant_arguments: int = 0  # constants passed as function arguments (larger, or no value known)
    arguments: tuple[tuple[str, str], ...] = ()  # (ONNX tensor, "in" or "out") per function argument
    views: int = 0  # nodes imported as views of their input's buffer (no kernel, no copy)
    ranges: dict[str, SymbolRange] = field(default_factory=dict)  # kept symbolic dimensions -> their ranges
    defaulted: tuple[str, ...] = ()  # the kept dimensions that took `ImportOptions.default_range`
    constant_values: dict[str, Any] = field(default_factory=dict)  # constant arguments' values the import knows
    # (folded outputs of a type the IR has no dense form for, e.g. bfloat16), to pass to a run


# --------------------------------------------------------------------------------------
# Loading


def _onnx():
    try:
        import onnx
    except ImportError:
        raise OnnxImportError(f"importing ONNX models needs the onnx package; {install_hint('onnx')}") from None
    return onnx


def load_model(path: str | os.PathLike):
    """Read and check an ONNX model file; OnnxImportError (`path: ...`) for anything that is not one."""
    _onnx()  # a missing package is not the file's fault: that message names no file
    path = os.fspath(path)
    with _about(path):
        return _read(path)


def _read(path: str):
    onnx = _onnx()
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise OnnxImportError(f"cannot read: {error.strerror}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except Exception:  # protobuf raises DecodeError, or RuntimeWarning-like errors from the C++ parser
        raise OnnxImportError("not an ONNX model (the protobuf does not parse); export the model with onnx.save") from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxImportError("not an ONNX model or its graph has no nodes; export the model with onnx.save")
    return model


def infer_bound(model):
    """ONNX's shape inference (strict) of `model`; OnnxImportError when it fails."""
    onnx = _onnx()
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as error:
        first_line = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else type(error).__name__
        raise OnnxImportError(
            f"ONNX shape inference failed: {first_line}; fix the model until "
            "onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True) accepts it"
        ) from None


def symbolic_dims(model) -> list[str]:
    """The names of the symbolic dimensions of the model's tensor inputs, first seen first."""
    names: dict[str, None] = {}
    for value in model.graph.input:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param:
                    names.setdefault(dim.dim_param)
    return list(names)


def bind_dims(model, dims: Mapping[str, int | SymbolRange]) -> None:
    """Set every symbolic input dimension `dims` fixes (a value, or a range of one value);
    a name that is no symbolic input dimension is an error."""
    try:
        check_dimension_names(dims, symbolic_dims(model), "--dim", "the model's inputs")
    except ValueError as error:
        raise OnnxImportError(str(error)) from None
    fixed = fixed_values(dims)
    for value in model.graph.input:
        if not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in fixed:
                dim.dim_value = fixed[dim.dim_param]


# --------------------------------------------------------------------------------------
# Importing


def import_onnx(model_or_path, options: ImportOptions | None = None) -> ImportedModel:
    """Import an ONNX model (a path or a ModelProto) as a scratchpad-dialect module.

    Raises OnnxImportError (one line) for a file that is not an ONNX model, failed shape
    inference, tensors without a static shape, unsupported tensor types, or a `dims` name
    that is no symbolic input dimension. Given a path, every message starts with it
    (`model.onnx: ...`); only a missing onnx package names no file.
    """
    options = options or ImportOptions()
    _onnx()
    if not isinstance(model_or_path, (str, os.PathLike)):
        return _import(model_or_path, options)
    path = os.fspath(model_or_path)
    with _about(path):
        return _import(_read(path), options)


def _import(model, options: ImportOptions) -> ImportedModel:
    onnx = _onnx()
    from onnx import numpy_helper

    width = options.string_width
    if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
        raise OnnxImportError(f"string width '{width}' must be a positive number of bytes")

    for node in model.graph.node:
        if not node.op_type:
            raise OnnxImportError("a node has no op_type; the model is malformed: export it again")
    _check_defined(model.graph)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # the caller's model stays as it was (dims, node order)
    ordered = _topological(list(copy.graph.node))  # shape inference needs producers first
    del copy.graph.node[:]
    copy.graph.node.extend(ordered)
    resolve_sequences(copy, options.sequence_inputs)  # sequences become lists of tensors, or one located refusal
    tensor_types(copy, options.string_width)  # the declared types first: ours is a clearer message than inference's
    bind_dims(copy, options.dims)
    if resolve_gradients(copy):  # Gradient nodes become their reverse-mode pass, which reads tensors made after them
        ordered = _topological(list(copy.graph.node))
        del copy.graph.node[:]
        copy.graph.node.extend(ordered)
    prefolded = _fold_shape_subgraphs(copy, options.max_global_bytes)
    symbolic: SymbolicModel | None = None
    if symbolic_dims(copy):
        symbolic = keep_symbols(copy, options.dims, options.default_range, infer_bound)
        model = symbolic.probe  # element types, static shapes, constants: as at the first probe
    else:
        model = infer_bound(copy)
    graph = model.graph
    tensors = tensor_types(model, options.string_width)
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None:
                constants[node.output[0]] = numpy_helper.to_array(onnx.helper.get_attribute_value(value))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), onnx.defs.onnx_opset_version())
    context = Graph(tensors, constants, opset)
    context.domain_opsets = {o.domain: o.version for o in model.opset_import if o.domain not in ("", "ai.onnx")}

    folded_nodes = _constant_foldable(graph, tensors)
    constants.update(_evaluate_folded(model, folded_nodes, tensors, constants, options.max_global_bytes))
    folded_ids = {id(node) for node in folded_nodes}
    if symbolic is not None:
        tensors.update(symbolic.shapes(graph, tensors, constants, folded_ids))
        context.shape_values = dict(symbolic.values)
    nodes = [node for node in graph.node if id(node) not in folded_ids]
    mapped, runnable, planned_only, reasons = _map_nodes(nodes, context, {value.name for value in graph.output})
    folded_outputs = [name for node in folded_nodes for name in node.output if name]
    constant_names = [init.name for init in graph.initializer] + folded_outputs
    return _build(model, nodes, mapped, context, options, runnable, planned_only, reasons, constant_names,
                  len(folded_nodes) + prefolded, symbolic)


NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
"""Op types whose outputs are not functions of their inputs: never folded."""


def _static_shapes(model) -> dict[str, tuple[int, ...]]:
    """The tensors whose every dimension inference knows, with their shapes."""
    graph = model.graph
    shapes: dict[str, tuple[int, ...]] = {}
    for value in (*graph.input, *graph.value_info, *graph.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            dims = value.type.tensor_type.shape.dim
            if all(dim.HasField("dim_value") for dim in dims):
                shapes[value.name] = tuple(int(dim.dim_value) for dim in dims)
    for initializer in graph.initializer:
        shapes[initializer.name] = tuple(int(dim) for dim in initializer.dims)
    return shapes


def _read_in_subgraphs(graph) -> set[str]:
    """The names the nodes of `graph`'s subgraphs (If, Loop, Scan bodies) read, at any depth."""
    from onnx import AttributeProto

    names: set[str] = set()
    for node in graph.node:
        for attribute in node.attribute:
            bodies = [attribute.g] if attribute.type == AttributeProto.GRAPH else (
                list(attribute.graphs) if attribute.type == AttributeProto.GRAPHS else [])
            for body in bodies:
                names |= {name for inner in body.node for name in inner.input} | _read_in_subgraphs(body)
    return names


def _fold_shape_subgraphs(model, limit: int) -> int:
    """Fold, in place, the subgraphs that compute shapes: `Shape` and `Size` of a tensor whose
    shape inference (with data propagation) knows, and the deterministic default-domain
    nodes without subgraphs that read only known values (initializers, Constant nodes,
    folded values) and either read such a shape or run while inference leaves some tensor's
    shape open, up to `limit` bytes an output, become initializers; inference runs again,
    until nothing more folds. This is how `torch.onnx.export`'s `view(b, s, h, d)` (Shape -> Gather ->
    Unsqueeze -> Concat -> Reshape) gets its static shape, and a Range or ConstantOfShape of
    computed bounds its length. Returns the number of nodes folded (0 when inference already
    knew every shape: the model is left as it is)."""
    import numpy as np
    from onnx import AttributeProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    folded_count = 0
    for _ in range(len(model.graph.node) + 1):
        shapes = _static_shapes(infer_bound(model))
        read = {name for node in model.graph.node for name in node.input} | {v.name for v in model.graph.output}
        shapes_open = not all(name in shapes for node in model.graph.node for name in node.output if name in read)
        values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                value = next((a for a in node.attribute if a.name == "value"), None)
                if value is not None:
                    values[node.output[0]] = numpy_helper.to_array(helper.get_attribute_value(value))
        of_shapes: set[str] = set()  # values computed from a Shape or Size
        in_subgraphs = _read_in_subgraphs(model.graph)
        folded = []
        for node in model.graph.node:  # topological already
            if node.domain not in ("", "ai.onnx") or node.op_type in NONDETERMINISTIC_OPS:
                continue
            if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
                continue
            names = inputs(node)
            outputs = [name for name in node.output if name]
            if node.op_type in ("Shape", "Size") and names and names[0] in shapes:
                shape = np.array(shapes[names[0]], dtype=np.int64)
                if node.op_type == "Size":
                    results = [np.array(int(np.prod(shape)), dtype=np.int64)]
                else:
                    found = {a.name: helper.get_attribute_value(a) for a in node.attribute}
                    results = [shape[found.get("start", 0):found.get("end", len(shape))]]
            elif (names and all(name in values for name in names) and node.op_type != "Constant"
                  and (shapes_open or any(name in of_shapes for name in names))):
                graph = helper.make_graph([node], "fold", [helper.make_empty_tensor_value_info(n) for n in names],
                                          [helper.make_empty_tensor_value_info(n) for n in outputs])
                sub = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
                try:
                    results = ReferenceEvaluator(sub).run(None, {name: values[name] for name in names})
                except Exception:  # an op the reference lacks, or a value it refuses: left to run
                    continue
            else:
                continue
            results = [np.asarray(value) for value in results]
            if len(results) != len(outputs) or any(value.nbytes > limit or value.dtype.kind not in "biuf"
                                                   for value in results) or any(n in in_subgraphs for n in outputs):
                continue  # too large, no dense form (bfloat16, ...), or read inside an If/Loop/Scan body
            values.update(zip(outputs, results))
            if node.op_type in ("Shape", "Size") or any(name in of_shapes for name in names):
                of_shapes.update(outputs)
            folded.append(node)
        if not folded:
            break
        folded_ids = {id(node) for node in folded}
        kept = [node for node in model.graph.node if id(node) not in folded_ids]
        read = {name for node in kept for name in node.input} | {value.name for value in model.graph.output}
        new = [numpy_helper.from_array(values[name], name) for node in folded for name in node.output
               if name and name in read]
        del model.graph.node[:]
        model.graph.node.extend(kept)
        model.graph.initializer.extend(new)
        if model.ir_version < 4:  # before IR 4 every initializer is also a graph input
            model.graph.input.extend(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
                                     for init in new)
        produced = {init.name for init in new}
        kept_info = [value for value in model.graph.value_info if value.name not in produced]
        del model.graph.value_info[:]
        model.graph.value_info.extend(kept_info)
        folded_count += len(folded)
    return folded_count


def _constant_foldable(graph, tensors: Mapping[str, Tensor | None]) -> list:
    """The nodes of constant-foldable subgraphs, in graph order.

    A node is foldable when it is a deterministic default-domain op without subgraphs,
    every input it reads is an initializer or a foldable node's output, and its outputs
    have static shapes (e.g. `Constant`, and `ConstantOfShape` of an initializer shape:
    the weights of the onnx package's "light" models).
    """
    from onnx import AttributeProto

    constant = {initializer.name for initializer in graph.initializer}
    folded = []
    for node in graph.node:  # topological already
        if node.domain not in ("", "ai.onnx") or node.op_type in NONDETERMINISTIC_OPS:
            continue
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
            continue
        outputs = [name for name in node.output if name]
        if not outputs or any(tensors.get(name) is None for name in outputs):
            continue
        if all(name in constant for name in inputs(node)):
            folded.append(node)
            constant.update(outputs)
    return folded


def _evaluate_folded(model, folded_nodes: list, tensors, constants: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """The values of the folded outputs that are at most `limit` bytes and computed only
    from such tensors, by ONNX's reference evaluator (larger ones are not evaluated:
    they stay arguments, and computing them could take gigabytes)."""
    small_nodes = []
    available = {name for name, value in constants.items() if value.nbytes <= limit}
    for node in folded_nodes:
        outputs = [name for name in node.output if name]
        if all(name in available for name in inputs(node)) and all(tensors[name].bytes() <= limit for name in outputs):
            small_nodes.append(node)
            available.update(outputs)
    if not small_nodes:
        return {}
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    wanted = [name for node in small_nodes for name in node.output if name]
    read = {name for node in small_nodes for name in inputs(node)}
    initializers = [init for init in model.graph.initializer if init.name in read]
    graph = helper.make_graph(
        small_nodes, "folded", [], [helper.make_empty_tensor_value_info(name) for name in wanted], initializers
    )
    sub = helper.make_model(graph, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    try:
        values = ReferenceEvaluator(sub).run(None, {})
    except Exception:  # an op the reference evaluator lacks: the constants stay arguments
        return {}
    return {name: value for name, value in zip(wanted, values) if value is not None}


def _map_nodes(nodes, context: Graph, graph_outputs: set[str]):
    mapped: list[Mapped] = []
    runnable: dict[str, str] = {}
    planned_only: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    context.used = {name for node in nodes for name in node.input if name} | graph_outputs
    for node in nodes:
        # An output nobody reads whose shape inference left open (e.g. Dropout's mask in
        # old opsets) is not planned: the kernel is taken not to write it.
        outs = tuple(o for o in node.output if o and (o in context.used or context.tensors.get(o) is not None))
        for name in (*inputs(node), *outs):
            if context.tensors.get(name) is None:
                why = value_dependence(node, name, context) if name in outs else None
                raise OnnxImportError(why or (
                    f"tensor '{name}' of {node_label(node)} has no static shape after shape inference; "
                    "give the model's inputs static shapes (or bind symbolic dimensions with --dim NAME=VALUE)"
                ))
        if not outs:
            raise OnnxImportError(f"{node_label(node)} has no output with a static shape; give its outputs shapes in value_info")
        strings = _string_operands(node, outs, context)
        # strings run on ONNX's reference only: its kernels take them as Python strings
        item = None if strings else _mapped(node, context, outs, reasons)
        if item is None and _has_reference(node, context.opset, context.domain_opsets):
            item = opaque(node, outs, context.opset, context.domain_opsets.get(node.domain), strings)
            runnable[_op_name(node)] = REFERENCE
        elif item is None:
            item = opaque(node, outs)
            planned_only[_op_name(node)] += 1
        else:
            runnable[node.op_type] = item.name
        mapped.append(item)
    return mapped, runnable, dict(sorted(planned_only.items())), reasons


def _string_operands(node, outs: tuple[str, ...], context: Graph) -> tuple[int, ...]:
    """The positions of `node`'s STRING operands among its kernel's ins then outs."""
    operands = (*inputs(node), *outs)
    return tuple(index for index, name in enumerate(operands) if context.tensor(name).string_width)


@functools.cache
def _narrow_types() -> frozenset:
    """bfloat16, float8, float4, 2- and 4-bit integers: numpy holds them through ml_dtypes, the
    hand-written kernels do not compute on them (ONNX's reference implementation does)."""
    return frozenset(narrow_element_types())
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Constant"})

REFERENCE = "onnx-reference"
"""What `ImportedModel.runnable` shows for an op type run by ONNX's reference implementation."""


SHAPE_INPUTS = {
    "Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Tile": (1,), "Range": (0, 1, 2), "Pad": (1, 3),
    "Slice": (1, 2, 3, 4), "Resize": (1, 2, 3), "Upsample": (1,), "TopK": (1,), "OneHot": (1,), "Squeeze": (1,),
    "Unsqueeze": (1,), "CenterCropPad": (1,), "Split": (1,), "ReduceSum": (1,), "ReduceMean": (1,),
    "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,),
    "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,),
}
"""The inputs whose values (not shapes) decide an op's output shape."""

COUNTING_OPS = {"Unique": 0, "NonZero": 0, "Compress": 1, "NonMaxSuppression": 0}
"""Ops whose output's length counts elements of an input's values (the input it counts)."""


def value_dependence(node, name: str, context: Graph) -> str | None:
    """Why output `name` of `node` has no static shape when its shape depends on values
    known only when the model runs: the input whose values decide it (one line, the
    node named), or a subgraph; None when that is not the reason."""
    from onnx import AttributeProto

    label = node_label(node)
    known = set(context.constants) | set(context.shape_values)
    if node.domain in ("", "ai.onnx") and node.op_type in COUNTING_OPS:
        counted = node.input[COUNTING_OPS[node.op_type]]
        return (f"{label}: the shape of its output '{name}' counts values of its input '{counted}', known only when "
                "the model runs; a static plan needs every shape at import (planning such an output at its upper "
                "bound is not supported): compute it outside the planned model")
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
        return (f"{label}: the shape of its output '{name}' comes from its subgraph at run time (subgraphs are not "
                "opened); a static plan needs every shape at import: unroll the loop or fold the branch in the model")
    if node.domain not in ("", "ai.onnx"):
        return None
    positions = SHAPE_INPUTS.get(node.op_type, ())
    runtime = [node.input[i] for i in positions if i < len(node.input) and node.input[i] and node.input[i] not in known]
    if not runtime:
        return None
    return (f"{label}: the shape of its output '{name}' depends on the values of its input '{runtime[0]}', known only "
            f"when the model runs; a static plan needs every shape at import: make '{runtime[0]}' a constant (an "
            "initializer or a Constant node)")


def _op_name(node) -> str:
    """The op type, with its domain outside the default one (`ai.onnx.ml.Binarizer`)."""
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


def _reference_loaders() -> dict:
    """The domains ONNX's reference implementation runs besides the default one."""
    from onnx.reference.ops import aionnx_preview, aionnx_preview_training, aionnxml

    return {"ai.onnx.preview.training": aionnx_preview_training.load_op, "ai.onnx.ml": aionnxml.load_op,
            "ai.onnx.preview": aionnx_preview.load_op}


def _has_reference(node, opset: int, domain_opsets: Mapping[str, int] | None = None) -> bool:
    """Whether the interpreter can run `node` with ONNX's reference implementation
    (`runtime/interp/onnx_reference.py`): a deterministic op whose subgraphs, if any, read
    nothing from the outer scope (which one node alone does not have) that the reference
    implements, or ONNX defines as a function of other operators, at the model's opset of
    its domain: the default domain, the training
    optimizers of `ai.onnx.preview.training` (Adagrad, Adam, Momentum; not Gradient, which
    differentiates a graph), the classic ML ops of `ai.onnx.ml`, `ai.onnx.preview`'s
    FlexAttention."""
    from onnx.reference.ops import load_op

    if node.domain not in ("", "ai.onnx"):
        loader = _reference_loaders().get(node.domain)
        version = (domain_opsets or {}).get(node.domain)
        if loader is None or version is None or outer_scope_reads(node):
            return False
        try:
            loader(node.domain, node.op_type, version)
        except Exception:  # noqa: BLE001 - an op this domain's reference lacks
            return False
        return True
    if node.op_type in NONDETERMINISTIC_OPS:
        return False
    if node.op_type == "Dropout" and not any(a.name == "seed" for a in node.attribute) and (
            opset < 7 or (len(node.input) > 2 and node.input[2])):
        return False  # it may train, and without a seed its mask is random
    if outer_scope_reads(node):
        return False
    try:
        load_op("", node.op_type, opset)
    except Exception:  # NotImplementedError, or a schema the reference does not know at this opset
        return _has_function_body(node.op_type, opset)
    return True


def _has_function_body(op_type: str, opset: int) -> bool:
    """Whether ONNX defines `op_type` at `opset` as a function of other operators (Gelu,
    HardSwish, Mish, GroupNormalization): the reference evaluator runs its body."""
    import onnx

    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except Exception:  # noqa: BLE001 - no such operator at this opset
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)



def _mapped(node, context: Graph, outs: tuple[str, ...], reasons: dict[str, str]) -> Kernel | View | None:
    """The node through the op table, or None (the reason kept) when it does not map."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in MAPPERS:
        return None
    if not node.output or not node.output[0]:
        reasons.setdefault(node.op_type, "its first output is omitted")
        return None
    narrow = next((name for name in (*inputs(node), *outs) if context.tensor(name).element_type in _narrow_types()), None)
    if narrow is not None and node.op_type not in VIEW_OPS:
        reasons.setdefault(node.op_type, f"the kernels compute on numpy's own element types, not '{context.tensor(narrow).element_type}'")
        return None
    try:
        return map_node(node, context, outs)
    except NotMapped as reason:
        reasons.setdefault(node.op_type, str(reason))
        return None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        detail = f"'{error.args[0]}'" if isinstance(error, KeyError) else " ".join(str(error).split()) or type(error).__name__
        raise OnnxImportError(
            f"{node_label(node)}: the importer cannot read its attributes and inputs ({detail}); "
            "check the node against the ONNX operator's specification"
        ) from None


def _build(model, nodes, mapped: list[Mapped], context: Graph, options: ImportOptions, runnable, planned_only,
           reasons, constant_names, folded: int, symbolic: SymbolicModel | None) -> ImportedModel:
    ranges = symbolic.ranges if symbolic is not None else {}
    emitted = emit(model.graph, mapped, context, options.function, options.max_global_bytes, constant_names, ranges)
    module = ModuleOp([*emitted.globals, emitted.function])
    if options.capacity is not None:
        module.attributes[TARGET_ATTR_KEY] = TargetAttr(options.target_name, options.capacity, options.alignment)
    return ImportedModel(
        module=module,
        nodes=len(nodes),
        buffers=emitted.buffers,
        loads=emitted.loads,
        stores=emitted.stores,
        runnable=dict(sorted(runnable.items())),
        planned_only=planned_only,
        reasons=reasons,
        folded=folded,
        globals=emitted.global_count,
        constant_arguments=emitted.argument_constants,
        arguments=emitted.arguments,
        views=sum(isinstance(item, View) for item in mapped),
        ranges=dict(ranges),
        defaulted=tuple(name for name in ranges if not isinstance(options.dims.get(name), SymbolRange)),
        constant_values={name: context.constants[name] for name, direction in emitted.arguments
                         if direction == "in" and name in context.constants and name in set(constant_names)},
    )


def _topological(nodes) -> list:
    """The nodes in an order where producers come first; the file's order wherever it is one."""
    produced_by = {name: index for index, node in enumerate(nodes) for name in node.output if name}
    done: set[int] = set()
    order: list = []
    visiting: set[int] = set()

    def visit(index: int) -> None:
        if index in done:
            return
        if index in visiting:
            raise OnnxImportError(
                f"the graph has a cycle through node '{nodes[index].name or nodes[index].op_type}'; "
                "an ONNX graph must be acyclic: export the model again"
            )
        visiting.add(index)
        for name in nodes[index].input:
            producer = produced_by.get(name)
            if producer is not None and producer != index:
                visit(producer)
        visiting.discard(index)
        done.add(index)
        order.append(nodes[index])

    for index in range(len(nodes)):
        visit(index)
    return order


def _check_defined(graph) -> None:
    """Every tensor a node reads is a model input, an initializer or some node's output."""
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    defined |= {name for node in graph.node for name in node.output if name}
    for node in graph.node:
        for name in node.input:
            if name and name not in defined:
                raise OnnxImportError(
                    f"{node_label(node)} reads '{name}', which is no input, initializer or node output "
                    "of the model; the graph is malformed"
                )


__all__ = ["DEFAULT_RANGE", "ImportOptions", "ImportedModel", "OnnxImportError", "bind_dims", "import_onnx", "load_model", "symbolic_dims"]
