"""ONNX models through IREE's frontend: a model file in, a planned (and verified) program out.

The path (the `iree` extra: IREE's compiler, with the `mlir` extra's bindings):

0. a model below opset `MIN_OPSET` is converted to it by `onnx.version_converter` (torch-
   mlir lowers each operator from some opset on), and `dims` bind symbolic input
   dimensions; the converted copy lives in a temporary directory, the file is left as it is;
1. torch-mlir's ONNX importer, as `iree-import-onnx` runs it (`IMPORT_SCRIPT`) -> the
   `torch` dialect (`torch.operator "onnx.*"` ops), each op located at its node's name;
2. `iree-opt --torch-onnx-to-torch-backend-pipeline
   --torch-backend-to-linalg-on-tensors-backend-pipeline` (torch-mlir's conversions,
   bundled in IREE) -> linalg on tensors, weights as `arith.constant dense<...>`; an op it
   cannot convert is reported at its ONNX node;
3. upstream MLIR's bufferization and loops (`telamalloc.interop.LOOPS_PIPELINE`, the
   `mlir` extra's bindings read IREE's text) -> memrefs and scf loops, weights as
   `memref.global` constants, one output argument per result;
4. telamalloc plans every function (`plan_mlir_module`: minimize mode, or fit in a
   capacity) and lowers it to one arena per function;
5. verification (`verify=True`): MLIR's JIT runs the unplanned and the planned program
   on the same seeded inputs and every output argument must be bit-identical; where the
   JIT cannot compile or run the program (an element type it cannot take, named before it
   runs; an abort of the compiled program, isolated in `run_jit`'s child process),
   `IreeResult.verified` is False and `IreeResult.verification` says why in one line.

IREE's tools run as subprocesses: IREE's Python package carries its own build of MLIR's
Python bindings, and loading both into one process breaks the `mlir` extra's (their
native libraries clash), so this module never imports `iree`.

`plan_onnx_with_iree(path)` is the API; `tela-import --frontend=iree model.onnx -o
planned.mlir [--capacity BYTES] [--verify] [--dim NAME=VALUE] [--time-limit S]` the command.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from telamalloc.extras import install_hint
from telamalloc.importers.onnx_graph import node_label
from telamalloc.importers.onnx_import import OnnxImportError, bind_dims, load_model, symbolic_dims

TORCH_TO_LINALG = (
    "--torch-onnx-to-torch-backend-pipeline",
    "--torch-backend-to-linalg-on-tensors-backend-pipeline",
)
"""The `iree-opt` passes from the torch dialect of `iree-import-onnx` to linalg on tensors."""


@dataclasses.dataclass(frozen=True)
class IreeResult:
    loops: str  # the unplanned program (memrefs and loops), MLIR's custom form
    planned: str  # the planned and lowered program, MLIR's custom form
    functions: dict[str, dict[str, int]]  # function -> {"load", "peak"} in bytes (planned functions)
    verified: bool  # planned and unplanned outputs compared bit for bit and equal
    verification: str  # how it was verified, or why it was not
    remarks: tuple[str, ...] = ()  # what was done to the model first (an opset conversion)


def iree_opt() -> Path | None:
    """The `iree-opt` binary of the installed IREE compiler package, or None."""
    try:
        spec = importlib.util.find_spec("iree.compiler")
    except (ImportError, ValueError):
        return None
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / "_mlir_libs" / "iree-opt"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _require() -> Path:
    binary = iree_opt()
    if binary is None:
        raise OnnxImportError(f"--frontend=iree needs IREE's compiler; {install_hint('iree')}")
    from telamalloc.interop import have_mlir_bindings

    if not have_mlir_bindings():
        raise OnnxImportError(
            f"--frontend=iree needs the upstream MLIR Python bindings; {install_hint('iree')}"
        )
    return binary


_TOOL_LOCATION = re.compile(r"^\S+:\d+:\d+: error: ")
_NODE_LOCATION = re.compile(r'^<unknown>:0: error: loc\("((?:[^"\\]|\\.)*)"\): ')
_OPERATOR = re.compile(r'<\{name = "onnx\.(\w+)"\}>')

MIN_OPSET = 17
"""The oldest default-domain opset handed to IREE's importer: torch-mlir converts each ONNX
operator from some version on (BatchNormalization from 15, ...), so older models are
converted to this one first (`onnx.version_converter`); the onnx package's opset-9 light
models all convert and lower."""

IMPORT_SCRIPT = """
import sys
import onnx
from iree.compiler.extras import onnx_importer
from iree.compiler.ir import Context

source, target = sys.argv[1], sys.argv[2]
try:
    model = onnx.shape_inference.infer_shapes(onnx.load(source), data_prop=True)
except ValueError:  # beyond protobuf's 2 GB: inference through files
    onnx.shape_inference.infer_shapes_path(source, target + ".inferred.onnx", data_prop=True)
    model = onnx.load(target + ".inferred.onnx")
info = onnx_importer.ModelInfo(model)
module = info.create_module(context=Context()).operation
onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
module.verify()
with open(target, "w") as stream:
    stream.write(module.get_asm(enable_debug_info=True, assume_verified=True))
"""
"""Step 1 in a subprocess: torch-mlir's ONNX importer (as `iree-import-onnx` runs it), with
each op's location, the name of its ONNX node, kept in the text so that iree-opt's errors
name the node."""


_UNLOCATED = re.compile(r'^<unknown>:0: error: (loc\("(?:[^"\\]|\\.)*"\): )?')
_EXCEPTION = re.compile(r"^[\w.]*(?:Error|Exception): (.*)$")


def _first_error(stderr: str) -> str:
    """The first error line of a tool, without its position in our temporary files; for a
    Python traceback (IREE's importer), the exception's message."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if any(line.startswith("Traceback") for line in lines):
        raised = [match.group(1) for line in lines if (match := _EXCEPTION.match(line))]
        if raised:
            return " ".join(raised[-1].rstrip(" {").split())
    errors = [line for line in lines if "error" in line.lower()]
    first = " ".join((errors or lines or ["no message"])[0].split())
    return _UNLOCATED.sub("", _TOOL_LOCATION.sub("", first))


def _lowering_error(path: str, stderr: str) -> OnnxImportError:
    """iree-opt's first error, located at the ONNX node it is about when it names one."""
    lines = [line.strip() for line in stderr.splitlines() if "error" in line.lower()]
    first = lines[0] if lines else ""
    node = _NODE_LOCATION.match(first)
    operator = _OPERATOR.search(first)
    if node is None or operator is None:
        return OnnxImportError(f"{path}: iree-opt cannot lower the model to linalg: {_first_error(stderr)}")
    name = _unescaped(node.group(1))
    label = f"node '{name}' ({operator.group(1)})" if name else f"a '{operator.group(1)}' node"
    reason = " ".join(first[node.end():].split(":")[0].split())
    return OnnxImportError(
        f"{path}: {label}: iree-opt cannot lower it to linalg ({reason}): torch-mlir has no conversion for this "
        "operator with these attributes; export the model without it, or use --frontend=telamalloc"
    )


def _unescaped(text: str) -> str:
    """A string of MLIR's printed form with its escapes (`\\"`, `\\\\`, `\\XX` a byte in hex) undone."""

    def byte(match: re.Match[bytes]) -> bytes:
        return bytes([int(match.group(1), 16)]) if match.group(1) else match.group(2)

    return re.sub(rb'\\(?:([0-9A-Fa-f]{2})|(["\\]))', byte, text.encode()).decode("utf-8", "replace")


def _prepared(path: str, dims: Mapping[str, int], folder: str) -> tuple[str, list[str]]:
    """The model file for IREE's importer, and remarks on what was done to it: the file
    itself, or a copy in `folder` converted to `MIN_OPSET` and with `dims` bound."""
    model = load_model(path)  # our one-line messages for files that are no model
    remarks: list[str] = []
    unbound = [name for name in symbolic_dims(model) if name not in dims]
    if unbound and not set(dims) - set(symbolic_dims(model)):
        names = ", ".join(f"'{name}'" for name in unbound)
        raise OnnxImportError(
            f"{path}: the model's inputs have symbolic dimensions without a value ({names}); bind each with "
            "--dim NAME=VALUE: planning needs static shapes"
        )
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), MIN_OPSET)
    if opset >= MIN_OPSET and not dims:
        return path, remarks
    import onnx

    onnx.load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    if opset < MIN_OPSET:
        model = _converted(path, model, opset)
        remarks.append(f"{path}: converted from opset {opset} to {MIN_OPSET} by onnx.version_converter "
                       "(torch-mlir lowers the operators of recent opsets)")
    try:
        bind_dims(model, dims)
    except OnnxImportError as error:
        raise OnnxImportError(f"{path}: {error}") from None
    converted = os.path.join(folder, "model.onnx")
    onnx.save(model, converted, save_as_external_data=model.ByteSize() >= 2**31)  # protobuf's limit
    return converted, remarks


_CPP_ASSERTION = re.compile(r"^\S+\.(?:cc|h):\d+: [\w:()]+: (Assertion `.*` failed: )?")


def _converted(path: str, model, opset: int):
    """`model` converted to `MIN_OPSET` by `onnx.version_converter` (an OnnxImportError,
    naming the node, for an operator ONNX no longer defines)."""
    from onnx import defs, version_converter

    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and not defs.has(node.op_type):
            raise OnnxImportError(
                f"{path}: {node_label(node)}: cannot convert opset {opset} to {MIN_OPSET} for IREE's importer: ONNX "
                "no longer defines this operator; export the model without it, or use --frontend=telamalloc"
            )
    try:
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as error:  # the converter raises RuntimeError and ValueError with C++ text
        raise OnnxImportError(
            f"{path}: cannot convert opset {opset} to {MIN_OPSET} for IREE's importer: "
            f"{_CPP_ASSERTION.sub('', _one_line(error))}; export the model at opset {MIN_OPSET} or later, "
            "or use --frontend=telamalloc"
        ) from None


def _to_linalg(path: str | os.PathLike, dims: Mapping[str, int]) -> tuple[str, list[str]]:
    binary = _require()
    path = os.fspath(path)
    with tempfile.TemporaryDirectory(prefix="tela-iree-") as folder:
        torch_file = os.path.join(folder, "model.torch.mlir")
        linalg_file = os.path.join(folder, "model.linalg.mlir")
        model_file, remarks = _prepared(path, dims, folder)
        imported = subprocess.run(
            [sys.executable, "-c", IMPORT_SCRIPT, model_file, torch_file], capture_output=True, text=True
        )
        if imported.returncode != 0:
            raise OnnxImportError(f"{path}: IREE's ONNX importer failed: {_first_error(imported.stderr)}")
        lowered = subprocess.run(
            [str(binary), *TORCH_TO_LINALG, "--mlir-print-debuginfo", torch_file, "-o", linalg_file],
            capture_output=True, text=True,
        )
        if lowered.returncode != 0:
            raise _lowering_error(path, lowered.stderr)
        return Path(linalg_file).read_text(), remarks


def onnx_to_linalg(path: str | os.PathLike, dims: Mapping[str, int] | None = None) -> str:
    """Steps 1-2: the model as linalg on tensors (MLIR text), by IREE's tools; a model of an
    opset below `MIN_OPSET` is converted first, `dims` bind symbolic input dimensions."""
    return _to_linalg(path, dims or {})[0]


def plan_onnx_with_iree(
    path: str | os.PathLike,
    *,
    capacity: int | None = None,
    verify: bool = True,
    seed: int = 0,
    time_limit: float | None = None,
    dims: Mapping[str, int] | None = None,
    inputs: Sequence[np.ndarray] | None = None,
) -> IreeResult:
    """Steps 1-5 (see the module doc): `path` to a planned, verified program.

    Minimize mode without `capacity`, else fit mode in `capacity` bytes; `dims` binds
    symbolic input dimensions (as `ImportOptions.dims`); a model of an opset below
    `MIN_OPSET` is converted first (`IreeResult.remarks` says so). `inputs` (the model's
    inputs in graph order, e.g. a test case's) are what verification runs on, instead of
    seeded random values: compiled code reads out-of-range indices without bounds checks,
    so random integers can make a run undefined; the outputs start zero-filled. Raises
    `OnnxImportError` (one line, naming the file, and the node where one is to blame) when
    a step fails, and `PassFailedAtOp` when planning does (e.g. the capacity is below LOAD).
    """
    from mlir import ir

    from telamalloc.interop import LOOPS_PIPELINE, InteropError, plan_mlir_module, run_pipeline
    from telamalloc.interop.mlir_plan import MlirPlanError

    linalg, remarks = _to_linalg(path, dims or {})
    path = os.fspath(path)
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        try:
            module = ir.Module.parse(linalg)
            run_pipeline(module, LOOPS_PIPELINE)
        except (ir.MLIRError, InteropError) as error:
            raise OnnxImportError(
                f"{path}: upstream MLIR cannot bufferize the model: {_located_in_model(path, _one_line(error))}"
            ) from None
        loops = str(module)
        try:
            planned = plan_mlir_module(
                module, mode="minimize" if capacity is None else "fit", capacity=capacity, time_limit=time_limit
            )
        except InteropError as error:
            raise OnnxImportError(f"{path}: {_located_in_model(path, str(error))}") from None
        except MlirPlanError as error:  # located in the model the user gave, not in IREE's text
            notes = tuple((_in_model(path, where), note) for where, note in error.notes)
            raise MlirPlanError(_in_model(path, error.location), error.message, error.kind, notes) from None
        functions = _plan_figures(planned)
        verified, how = (False, "not verified (verification not asked for)")
        if verify:
            try:
                verified, how = _verify(module, planned, seed, inputs)
            except OnnxImportError as error:  # given inputs that do not match the program
                raise OnnxImportError(f"{path}: {error}") from None
        return IreeResult(loops, str(planned), functions, verified, how, tuple(remarks))


_NAMED_LOCATION = re.compile(r'^loc\(("(?:[^"\\]|\\.)*")\)$')
_TEXT_POSITION = re.compile(r"^-:(\d+):(\d+)$")


def _in_model(path: str, location: str) -> str:
    """A planning diagnostic's location (`interop.mlir_plan`) in terms of the model: the ops
    keep their ONNX node's name as their location (`loc("relu1")`, through iree-opt's
    `--mlir-print-debuginfo`), a function its graph's (`loc("graph:main")`); a position in
    IREE's linalg text, which is never written, is named as such; anything else is the model."""
    named = _NAMED_LOCATION.match(location)
    if named:
        name = json.loads(named[1])
        if name.startswith("graph:"):
            return f"{path}: graph '{name.removeprefix('graph:')}'"
        if name and not name.startswith("onnx_importer."):  # unnamed nodes, the importer's constants: no node
            return f"{path}: node '{name}'"
    position = _TEXT_POSITION.match(location)
    if position:
        return f"{path}: line {position[1]}, column {position[2]} of the linalg program IREE made of it"
    return path


_LOCATION_IN_TEXT = re.compile(r'loc\("(?:[^"\\]|\\.)*"\)|(?<![\w/.])-:\d+:\d+')


def _located_in_model(path: str, message: str) -> str:
    """`message` (MLIR's, about the program IREE made of the model) with each location it
    quotes named in the model (`_in_model`, without repeating the model's path)."""
    def named(match: re.Match) -> str:
        return _in_model(path, match[0]).removeprefix(path).removeprefix(": ") or "the model"

    return _LOCATION_IN_TEXT.sub(named, message)


def _plan_figures(module) -> dict[str, dict[str, int]]:
    from mlir import ir

    figures = {}
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        attributes = op.operation.attributes
        if "scratchpad.load" not in attributes:
            continue
        name = ir.StringAttr(attributes["sym_name"]).value
        figures[name] = {
            key: ir.IntegerAttr(attributes[f"scratchpad.{key}"]).value for key in ("load", "peak")
        }
    return figures


def _entries(module) -> list[tuple[str, list[tuple[tuple[int, ...], np.dtype]]]]:
    """Public functions returning nothing, with each memref argument's shape and dtype."""
    from mlir import ir

    from telamalloc.interop.mlir_bindings import element_dtype

    entries = []
    for op in module.body.operations:
        if op.operation.name != "func.func" or len(op.operation.regions[0].blocks) == 0:
            continue
        attributes = op.operation.attributes
        if "sym_visibility" in attributes and ir.StringAttr(attributes["sym_visibility"]).value == "private":
            continue
        function_type = ir.FunctionType(ir.TypeAttr(attributes["function_type"]).value)
        if function_type.results:
            continue
        arguments = []
        for type_ in function_type.inputs:
            memref = ir.MemRefType(type_)
            dtype = element_dtype(str(memref.element_type))
            if dtype is None:
                raise OnnxImportError(f"argument type '{type_}' of '@{ir.StringAttr(attributes['sym_name']).value}' "
                                      "has an element type numpy cannot hold")
            arguments.append((tuple(memref.shape), dtype))
        entries.append((ir.StringAttr(attributes["sym_name"]).value, arguments))
    return entries


def _inputs(arguments: Sequence[tuple[tuple[int, ...], np.dtype]], seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in arguments:
        if dtype.kind == "f":
            arrays.append(generator.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(generator.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(generator.integers(-8, 8, shape).astype(dtype))
    return arrays


def _given(name: str, arguments: Sequence[tuple[tuple[int, ...], np.dtype]],
           inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The arguments of `@name` from the model's `inputs` (bufferization puts the inputs
    first, then one argument per output, which starts zero-filled); an `OnnxImportError`
    naming the input whose count, shape or element type does not match."""
    if len(inputs) > len(arguments):
        raise OnnxImportError(f"{len(inputs)} inputs given but '@{name}' takes {len(arguments)} arguments "
                              "(inputs and outputs); pass one array per model input, in graph order")
    arrays = []
    for index, ((shape, dtype), array) in enumerate(zip(arguments, inputs, strict=False)):
        if array.dtype.kind in "iu" and dtype.kind in "iu" and array.dtype.itemsize == dtype.itemsize:
            array = array.view(dtype)  # MLIR's integers are signless: uint16 data is an i16 memref's bits
        if tuple(array.shape) != shape or array.dtype != dtype:
            raise OnnxImportError(
                f"input #{index} is {array.dtype} of shape {tuple(array.shape)} where '@{name}' argument #{index} "
                f"is {dtype} of shape {shape}; pass the model's inputs in graph order, as the model types them"
            )
        arrays.append(np.array(array, copy=True))
    return arrays + [np.zeros(shape, dtype) for shape, dtype in arguments[len(inputs):]]


def _verify(unplanned, planned, seed: int, inputs: Sequence[np.ndarray] | None = None) -> tuple[bool, str]:
    """Runs both programs on the same inputs with MLIR's JIT (`inputs`, else seeded random
    values); compares every argument.

    (telamalloc's interpreter is no fallback here: it runs loop nests of this size far
    slower, and lacks the `math` ops and `memref.copy` these programs hold; issue 15
    items 2-4.)"""
    from telamalloc.interop import InteropError, jit_unsupported_types, run_jit
    from telamalloc.interop.mlir_bindings import jit_element_type_hint

    for module in (unplanned, planned):
        unsupported = jit_unsupported_types(module)
        if unsupported:
            return False, (f"not verified: MLIR's JIT cannot run element type '{unsupported[0]}'"
                           f"{jit_element_type_hint(unsupported[0])}")
    try:
        entries = _entries(unplanned)
    except OnnxImportError as error:
        return False, f"not verified: {error}"
    if not entries:
        return False, "not verified: no public function without results to run"
    if inputs is not None and len(entries) != 1:
        raise OnnxImportError(f"inputs given but the program has {len(entries)} public functions to run; "
                              "verify without given inputs")
    reasons = []
    diagnostics: list[str] = []

    def collect(diagnostic) -> bool:  # MLIR would print them on stderr; they become the reason
        diagnostics.append(" ".join(str(diagnostic.message).split()))
        return True

    runs = [(name, _inputs(arguments, seed) if inputs is None else _given(name, arguments, inputs))
            for name, arguments in entries]
    handler = unplanned.context.attach_diagnostic_handler(collect)
    try:
        for name, before in runs:
            initial = [array.copy() for array in before]
            after = [array.copy() for array in before]
            run_jit(unplanned, name, before)
            run_jit(planned, name, after)
            for index, (a, b) in enumerate(zip(before, after, strict=True)):
                if a.tobytes() != b.tobytes():
                    if not _repeats(unplanned, name, before, initial):
                        return False, ("not verified: the program's outputs differ from run to run before planning "
                                       f"('@{name}' on the same inputs: it reads memory it does not own, e.g. an "
                                       "index out of range), so a plan cannot be compared with it")
                    return False, f"mismatch: '@{name}' argument #{index} differs after planning (MLIR's JIT)"
        on = "the given inputs" if inputs is not None else f"random inputs (seed {seed})"
        return True, (f"verified with MLIR's JIT: {len(entries)} function(s), outputs bit-identical before and "
                      f"after planning on {on}")
    except (InteropError, RuntimeError) as error:  # the JIT child's failure or abort, one line
        reasons.append(f"MLIR's JIT cannot run it ({diagnostics[0] if diagnostics else _one_line(error)})")
    finally:
        handler.detach()
    return False, "not verified: " + "; ".join(reasons)


def _repeats(module, name: str, outputs: Sequence[np.ndarray], inputs: Sequence[np.ndarray]) -> bool:
    """Whether `@name` of `module` run again on `inputs` gives `outputs` bit for bit: a
    difference after planning blames the plan only where the program repeats itself
    (compiled code that reads out of bounds gives other bytes on every run)."""
    from telamalloc.interop import run_jit

    again = [array.copy() for array in inputs]
    run_jit(module, name, again)
    return all(a.tobytes() == b.tobytes() for a, b in zip(outputs, again, strict=True))


def _one_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


__all__ = ["MIN_OPSET", "TORCH_TO_LINALG", "IreeResult", "iree_opt", "onnx_to_linalg", "plan_onnx_with_iree"]
