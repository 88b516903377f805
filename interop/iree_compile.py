"""IREE's compiler, in process, with telamalloc laying out the transient memory of its packs.

The route (IREE's own Python API: `iree.compiler.api` sessions and invocations, the
`iree.compiler.ir` module they hand out, `iree.compiler.passmanager`):

1. IREE's standard pipeline up to its `flow` phase (an invocation compiling to `flow`);
2. IREE's stream phase up to its layout of slices (`STREAM_BEFORE_LAYOUT`): the stream
   tensor and async pipelines, then the start of the cmd pipeline
   (`iree-stream-schedule-allocation` ... `iree-stream-pack-constants`);
3. `plan_iree_packs` (`telamalloc.interop.iree_packs`) on the module in place;
4. the rest of the stream phase (`STREAM_AFTER_LAYOUT`: `iree-stream-layout-slices`,
   which lays out the packs telamalloc left alone, `canonicalize`, and the rest of the cmd,
   optimization and cleanup pipelines, as IREE 3.13's `buildStreamTransformPassPipeline`
   orders them);
5. an invocation compiling from `stream` to the end: the `.vmfb`.

With the step switched off the output is byte-identical to `iree-compile`'s (the tests check
it), which is how the split of the stream phase is kept honest. IREE's Python package names
the compile-from/to phases in its C API only; they are set through its loaded library.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from telamalloc.extras import install_hint
from telamalloc.interop.iree_packs import DEFAULT_ALIGNMENT, DEFAULT_NODE_LIMIT, IreePlanReport, plan_iree_packs

IREE_RELEASE = "3.13.0"
"""The IREE release the split of the stream phase is written for (iree-base-compiler and
iree-base-runtime, the `iree` extra's pins)."""

_FUNCTION_LIKE = ("func.func", "util.initializer", "util.func")


def _nest(passes: str) -> str:
    return ",".join(f"{op}({passes})" for op in _FUNCTION_LIKE)


def stream_pipelines(initialization_mode: str = "sync", optimize_bindings: bool = True) -> tuple[str, str]:
    """IREE 3.13's stream phase split before `iree-stream-layout-slices`: (before, after),
    textual pass pipelines on the module."""
    options = f"{{initialization-mode={initialization_mode} optimize-bindings={str(optimize_bindings).lower()}}}"
    before = ",".join([
        "iree-util-verify-initialization-order",
        f"iree-stream-tensor-transformation-pipeline{options}",
        f"iree-stream-async-transformation-pipeline{options}",
        "iree-stream-schedule-allocation",
        "iree-stream-emplace-transients",
        "iree-stream-materialize-transient-size-queries",
        _nest("iree-stream-pack-constants"),
    ])
    after = ",".join([
        _nest("iree-stream-layout-slices,canonicalize"),
        "iree-util-propagate-subranges",
        f"iree-stream-cleanup-pipeline{options}",
        "iree-stream-automatic-reference-counting",
        "iree-stream-annotate-constant-transient-size",
        "iree-stream-verify-lowering-to-cmd",
        f"iree-stream-optimization-pipeline{options}",
        f"iree-stream-cleanup-pipeline{options}",
        "symbol-dce",
    ])
    return f"builtin.module({before})", f"builtin.module({after})"


class IreeCompileError(Exception):
    """IREE rejected the input or a flag (its own diagnostics were printed), or the route
    cannot run as asked; the message is one line."""


def release_problem() -> str | None:
    """None when IREE's compiler (and runtime, when installed) are the release telamalloc's
    route is written for; else one line saying what is installed and what to install."""
    found = []
    for distribution in ("iree-base-compiler", "iree-base-runtime"):
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            if distribution == "iree-base-compiler":
                return f"IREE's compiler is not installed; {install_hint('iree')}"
            continue
        if version.split("rc")[0] != IREE_RELEASE:
            found.append(f"{distribution} {version}")
    if found:
        return (f"{', '.join(found)} installed, but telamalloc's IREE route is written for IREE {IREE_RELEASE}; "
                f"{install_hint('iree')}")
    return None


@dataclass(frozen=True)
class IreeCompileResult:
    vmfb: bytes
    report: IreePlanReport
    stream: str | None = None  # the module after the stream phase (MLIR text), when asked for


MIN_ONNX_OPSET = 17
"""Models below this default-domain opset are converted by IREE's importer (`--opset-version`):
torch-mlir lowers the operators of recent opsets only."""


def _opset(path: str) -> int | None:
    import onnx

    model = onnx.load(path, load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def import_onnx(path: str | os.PathLike, folder: str | os.PathLike) -> str:
    """The ONNX model `path` imported by IREE's importer (`iree-import-onnx`, run as a
    subprocess, converting a model below `MIN_ONNX_OPSET` first) into `folder`; returns the
    `.mlir` file. An `IreeCompileError` (one line naming the model) when it cannot."""
    path = os.fspath(path)
    target = os.path.join(os.fspath(folder), os.path.splitext(os.path.basename(path))[0] + ".mlir")
    command = [sys.executable, "-m", "iree.compiler.tools.import_onnx", path, "-o", target]
    try:
        opset = _opset(path)
    except Exception as error:  # onnx raises DecodeError and others for a file that is no model
        reason = " ".join(str(error).split()) or type(error).__name__
        raise IreeCompileError(f"{path}: cannot read the ONNX model: {reason}") from None
    if opset is not None and opset < MIN_ONNX_OPSET:
        command[4:4] = ["--opset-version", str(MIN_ONNX_OPSET)]
    imported = subprocess.run(command, capture_output=True, text=True)
    if imported.returncode != 0:
        lines = [line.strip() for line in imported.stderr.splitlines() if line.strip()]
        raise IreeCompileError(f"{path}: IREE's ONNX importer failed: {lines[-1] if lines else 'no message'}")
    return target


def _phase_setters():
    from iree.compiler.api import ctypes_dl

    library = ctypes_dl._dylib
    for name in ("ireeCompilerInvocationSetCompileToPhase", "ireeCompilerInvocationSetCompileFromPhase"):
        getattr(library, name).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        getattr(library, name).restype = None
    return library.ireeCompilerInvocationSetCompileToPhase, library.ireeCompilerInvocationSetCompileFromPhase


def _flag_value(session, name: str) -> str | None:
    prefix = f"--{name}="
    for flag in session.get_flags():
        if flag.startswith(prefix):
            return flag[len(prefix):]
    return None


def compile_with_telamalloc(
    source: str | os.PathLike | bytes,
    flags: Sequence[str] = (),
    *,
    enabled: bool = True,
    time_limit: float | None = None,
    node_limit: int = DEFAULT_NODE_LIMIT,
    default_alignment: int = DEFAULT_ALIGNMENT,
    session_flags: bool = True,
    step: Callable[[Any], IreePlanReport] | None = None,
    keep_stream: bool = False,
    vmfb: bool = True,
) -> IreeCompileResult:
    """Compiles `source` (an `.mlir` file path, or MLIR text / bytecode as bytes) to a
    `.vmfb` with IREE's pipeline and telamalloc's layout of its packs (`enabled=False`:
    IREE's own layout, the output of `iree-compile` with the same flags).

    `flags` are `iree-compile`'s `--iree-*` session flags (set on a new session; a process
    that set IREE's global command line, as `tela-iree-compile` does, passes them there and
    `session_flags=False`). `step` replaces telamalloc's step (a callable on the module,
    returning the report; tests write a wrong layout with it); `keep_stream` keeps the module's
    text after the stream phase in the result; `vmfb=False` stops after the stream phase (the
    result's `vmfb` is empty: for measuring the plans alone). Raises `IreeCompileError` when
    IREE rejects the input or a flag: IREE prints its own diagnostics on stderr."""
    from iree.compiler import passmanager
    from iree.compiler.api import Output, Session, Source

    set_compile_to, set_compile_from = _phase_setters()
    session = Session()
    try:
        if session_flags and flags:
            try:
                session.set_flags(*flags)
            except ValueError as error:
                raise IreeCompileError(" ".join(str(error).split())) from None
        if _flag_value(session, "iree-execution-model") not in (None, "async-internal"):
            raise IreeCompileError("--iree-execution-model other than async-internal has no stream phase to plan; "
                                   "use iree-compile")
        initialization = _flag_value(session, "iree-scheduling-initialization-mode") or "sync"
        optimize = (_flag_value(session, "iree-scheduling-optimize-bindings") or "true") == "true"
        before, after = stream_pipelines(initialization, optimize)
        first = session.invocation()
        first.enable_console_diagnostics()
        set_compile_to(first._inv_p, b"flow")
        if isinstance(source, bytes):
            text = source if source.endswith(b"\0") or source[:4] == b"ML\xefR" else source + b"\0"
            parsed = first.parse_source(Source.wrap_buffer(session, text))
        else:
            parsed = first.parse_source(Source.open_file(session, os.fspath(source)))
        if not parsed or not first.execute():
            raise IreeCompileError("IREE rejected the input (its diagnostics above)")
        module = first.export_module()
        with session.context:
            try:
                passmanager.PassManager.parse(before).run(module)
                if step is not None:
                    report = step(module)
                else:
                    report = plan_iree_packs(module, time_limit=time_limit, node_limit=node_limit,
                                             default_alignment=default_alignment, enabled=enabled)
                passmanager.PassManager.parse(after).run(module)
                stream = str(module) if keep_stream else None
            except Exception as error:  # IREE's passes raise MLIRError (a subclass of Exception)
                raise IreeCompileError(f"IREE's stream phase failed: {' '.join(str(error).split())}") from None
        if not vmfb:
            return IreeCompileResult(b"", report, stream)
        last = session.invocation()
        last.enable_console_diagnostics()
        set_compile_from(last._inv_p, b"stream")
        last.import_module(module)
        if not last.execute():
            raise IreeCompileError("IREE's pipeline after the stream phase failed (its diagnostics above)")
        output = Output.open_membuffer()
        last.output_vm_bytecode(output)
        built = bytes(output.map_memory())
        output.close()
        return IreeCompileResult(built, report, stream)
    finally:
        session.close()


__all__ = [
    "IREE_RELEASE",
    "IreeCompileError",
    "IreeCompileResult",
    "MIN_ONNX_OPSET",
    "compile_with_telamalloc",
    "import_onnx",
    "release_problem",
    "stream_pipelines",
]
