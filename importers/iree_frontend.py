"""ONNX models through IREE's frontend: a model file in, a planned (and verified) program out.

The path (the `iree` extra: IREE's compiler, with the `mlir` extra's bindings):

1. `iree-import-onnx model.onnx` -> the `torch` dialect (`torch.operator "onnx.*"` ops);
2. `iree-opt --torch-onnx-to-torch-backend-pipeline
   --torch-backend-to-linalg-on-tensors-backend-pipeline` (torch-mlir's conversions,
   bundled in IREE) -> linalg on tensors, weights as `arith.constant dense<...>`;
3. upstream MLIR's bufferization and loops (`telamalloc.interop.LOOPS_PIPELINE`, the
   `mlir` extra's bindings read IREE's text) -> memrefs and scf loops, weights as
   `memref.global` constants, one output argument per result;
4. telamalloc plans every function (`plan_mlir_module`: minimize mode, or fit in a
   capacity) and lowers it to one arena per function;
5. verification (`verify=True`): MLIR's JIT runs the unplanned and the planned program
   on the same seeded inputs and every output argument must be bit-identical; where the
   JIT cannot compile the program (today: `math` ops, `memref.copy`),
   `IreeResult.verified` is False and `IreeResult.verification` says why.

IREE's tools run as subprocesses: IREE's Python package carries its own build of MLIR's
Python bindings, and loading both into one process breaks the `mlir` extra's (their
native libraries clash), so this module never imports `iree`.

`plan_onnx_with_iree(path)` is the API; `tela-import --frontend=iree model.onnx -o
planned.mlir [--capacity BYTES] [--verify]` the command.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from telamalloc.extras import install_hint
from telamalloc.importers.onnx_import import OnnxImportError

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


def _first_error(stderr: str) -> str:
    """The first error line of a tool, without its position in our temporary files."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return _TOOL_LOCATION.sub("", " ".join((errors or lines or ["no message"])[0].split()))


def onnx_to_linalg(path: str | os.PathLike) -> str:
    """Steps 1-2: the model as linalg on tensors (MLIR text), by IREE's tools."""
    binary = _require()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise OnnxImportError(f"{path}: cannot read: No such file or directory")
    with tempfile.TemporaryDirectory(prefix="tela-iree-") as folder:
        torch_file = os.path.join(folder, "model.torch.mlir")
        linalg_file = os.path.join(folder, "model.linalg.mlir")
        imported = subprocess.run(
            [sys.executable, "-m", "iree.compiler.tools.import_onnx", path, "-o", torch_file],
            capture_output=True, text=True,
        )
        if imported.returncode != 0:
            raise OnnxImportError(f"{path}: iree-import-onnx failed: {_first_error(imported.stderr)}")
        lowered = subprocess.run(
            [str(binary), *TORCH_TO_LINALG, torch_file, "-o", linalg_file], capture_output=True, text=True
        )
        if lowered.returncode != 0:
            raise OnnxImportError(
                f"{path}: iree-opt cannot lower the model to linalg: {_first_error(lowered.stderr)}"
            )
        return Path(linalg_file).read_text()


def plan_onnx_with_iree(
    path: str | os.PathLike,
    *,
    capacity: int | None = None,
    verify: bool = True,
    seed: int = 0,
    time_limit: float | None = None,
) -> IreeResult:
    """Steps 1-5 (see the module doc): `path` to a planned, verified program.

    Minimize mode without `capacity`, else fit mode in `capacity` bytes. Raises
    `OnnxImportError` (one line, naming the file) when a step fails, and `PassFailedAtOp`
    when planning does (e.g. the capacity is below LOAD).
    """
    from mlir import ir

    from telamalloc.interop import LOOPS_PIPELINE, InteropError, plan_mlir_module, run_pipeline

    linalg = onnx_to_linalg(path)
    path = os.fspath(path)
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        try:
            module = ir.Module.parse(linalg)
            run_pipeline(module, LOOPS_PIPELINE)
        except (ir.MLIRError, InteropError) as error:
            raise OnnxImportError(f"{path}: upstream MLIR cannot bufferize the model: {_one_line(error)}") from None
        loops = str(module)
        try:
            planned = plan_mlir_module(
                module, mode="minimize" if capacity is None else "fit", capacity=capacity, time_limit=time_limit
            )
        except InteropError as error:
            raise OnnxImportError(f"{path}: {error}") from None
        functions = _plan_figures(planned)
        verified, how = (False, "not verified (verification not asked for)")
        if verify:
            verified, how = _verify(module, planned, seed)
        return IreeResult(loops, str(planned), functions, verified, how)


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

    from telamalloc.interop.mlir_bindings import NUMPY_DTYPES

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
            arguments.append((tuple(memref.shape), np.dtype(NUMPY_DTYPES[str(memref.element_type)])))
        entries.append((ir.StringAttr(attributes["sym_name"]).value, arguments))
    return entries


def _inputs(arguments: Sequence[tuple[tuple[int, ...], np.dtype]], seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in arguments:
        if dtype.kind == "f":
            arrays.append(generator.standard_normal(shape).astype(dtype))
        else:
            arrays.append(generator.integers(-8, 8, shape).astype(dtype))
    return arrays


def _verify(unplanned, planned, seed: int) -> tuple[bool, str]:
    """Runs both programs on the same seeded inputs with MLIR's JIT; compares every argument.

    (telamalloc's interpreter is no fallback here: it runs loop nests of this size far
    slower, and lacks the `math` ops and `memref.copy` these programs hold; issue 15
    items 2-4.)"""
    from telamalloc.interop import InteropError, run_jit

    entries = _entries(unplanned)
    if not entries:
        return False, "not verified: no public function without results to run"
    reasons = []
    diagnostics: list[str] = []

    def collect(diagnostic) -> bool:  # MLIR would print them on stderr; they become the reason
        diagnostics.append(" ".join(str(diagnostic.message).split()))
        return True

    handler = unplanned.context.attach_diagnostic_handler(collect)
    try:
        for name, arguments in entries:
            before = _inputs(arguments, seed)
            after = [array.copy() for array in before]
            run_jit(unplanned, name, before)
            run_jit(planned, name, after)
            for index, (a, b) in enumerate(zip(before, after, strict=True)):
                if a.tobytes() != b.tobytes():
                    return False, f"mismatch: '@{name}' argument #{index} differs after planning (MLIR's JIT)"
        return True, f"verified with MLIR's JIT: {len(entries)} function(s), outputs bit-identical before and after planning"
    except (InteropError, RuntimeError) as error:  # the ExecutionEngine raises RuntimeError
        reasons.append(f"MLIR's JIT cannot run it ({diagnostics[0] if diagnostics else _one_line(error)})")
    finally:
        handler.detach()
    return False, "not verified: " + "; ".join(reasons)


def _one_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


__all__ = ["TORCH_TO_LINALG", "IreeResult", "iree_opt", "onnx_to_linalg", "plan_onnx_with_iree"]
