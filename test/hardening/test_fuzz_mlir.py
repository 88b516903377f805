"""Bad .mlir files for tela-opt and tela-run: a catalogue, regression tests, a mutation fuzzer.

The catalogue (``MLIR_CASES``) is one named case per bad-input class with its exact
message and exit status; docs/errors.md lists the same rows, and
``test_the_catalogue_documents_every_mlir_case`` keeps the two in step.

The fuzzer mutates the examples and a small program (truncation, deleted, duplicated and
swapped lines, hostile integers and types, swapped SSA names, memory spaces dropped,
kernels renamed, stray bytes, tight target capacities) and runs, in-process so that any
escaping exception fails the test with its input:
- ``tela-opt -p tela-pipeline -o out.mlir``: exit 0, or 1-3 (docs/errors.md) with exactly
  one located line on stderr and ``out.mlir`` left as it was; on 0 an output that parses again;
- ``tela-run``: exit 0, or 1-2 with exactly one line on stderr;
- ``tela-run --verify`` on every mutant that ran: planning may fail (one line), but a
  plan that runs must verify (no mismatch, no shadow violation): the program ran, so it
  reads nothing uninitialized, and any difference would be a planner or lowering bug.
Mutants whose loops would run for very long (a huge constant) skip the runs.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from telamalloc.tools import tela_opt, tela_run

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
FUZZ_SEED = int(os.environ.get("TELAMALLOC_FUZZ_SEED", "20261130"))  # another seed explores other inputs
MUTANTS = 3000 if LONG else 120
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILE = "bad.mlir"
LOCATED = re.compile(r"^bad\.mlir(:\d+:\d+)?: error: \S")
ATTACHED = re.compile(r"^bad\.mlir(:\d+:\d+)?: (note|remark): \S")  # notes of an error, remarks of a pass

SMALL = """\
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 1024, alignment = 16>} {
  func.func @main(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
    %a = scratchpad.alloc() : memref<4x4xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<4x4xf32, #scratchpad.space>
    scratchpad.dma %x -> %a : memref<4x4xf32> -> memref<4x4xf32, #scratchpad.space>
    scratchpad.kernel "relu" ins(%a : memref<4x4xf32, #scratchpad.space>) outs(%b : memref<4x4xf32, #scratchpad.space>)
    scratchpad.dealloc %a : memref<4x4xf32, #scratchpad.space>
    scratchpad.dma %b -> %y : memref<4x4xf32, #scratchpad.space> -> memref<4x4xf32>
    scratchpad.dealloc %b : memref<4x4xf32, #scratchpad.space>
    func.return
  }
}
"""


def _small(old: str, new: str) -> str:
    assert old in SMALL
    return SMALL.replace(old, new)


def _func(body: str, arguments: str = "") -> str:
    return f"func.func @f({arguments}) {{\n{body}  func.return\n}}\n"


ALLOC = "  %a = scratchpad.alloc() : memref<4xf32, #scratchpad.space>\n"
PIPELINE = ["-p", "tela-pipeline"]
# SMALL's a and b apart: in place (the default), the relu writes b over a, one 64-byte
# buffer; the capacity cases need both live at once.
APART = ["-p", "tela-pipeline{inplace=none}"]

# (name, tool, file text or bytes or None, arguments before the file, exit status, stderr line)
MLIR_CASES = [
    ("binary-garbage", "tela-opt", b"\x00\xff\xfe binary", [], 2,
     "bad.mlir: error: input is not UTF-8 text (byte '0xff' at offset '1'); pass an MLIR text file"),
    ("truncated-file", "tela-opt", SMALL[: SMALL.index("    scratchpad.dealloc %a")], PIPELINE, 2,
     "bad.mlir:7:1: error: unexpected end of input (in block definition); the file may be truncated or miss a '}'"),
    ("truncated-mid-op", "tela-opt", SMALL[: SMALL.index(": memref<4x4xf32, #scratchpad.space>\n")], PIPELINE, 2,
     "bad.mlir:3:29: error: unexpected end of input (Expected ':'); the file may be truncated or miss a '}'"),
    ("stray-closing-brace", "tela-opt", _func("") + "}\n", [], 2,
     "bad.mlir:4:1: error: expected an operation; check for stray text or an unbalanced '}'"),
    ("unterminated-string", "tela-opt", SMALL.replace("%x: memref<4x4xf32>,", '%x": memref<4x4xf32>,'), [], 2,
     "bad.mlir:2:21: error: unterminated string literal; close it with '\"' on the same line"),
    ("run-unterminated-string", "tela-run", SMALL.replace('"relu"', '"relu'), [], 2,
     "bad.mlir:6:23: error: unterminated string literal; close it with '\"' on the same line"),
    ("bad-first-character", "tela-opt", "&x\n", [], 2, "bad.mlir:1:1: error: Unexpected character: &"),
    ("run-bad-first-character", "tela-run", "&x\n", [], 2, "bad.mlir:1:1: error: Unexpected character: &"),
    ("syntax-error", "tela-opt", _func("  %a = scratchpad.alloc( : memref<4xf32, #scratchpad.space>\n"), [], 2,
     "bad.mlir:2:26: error: Expected ')'"),
    ("unknown-op", "tela-opt", _func("  %a = scratchpad.allok() : memref<4xf32, #scratchpad.space>\n"), [], 2,
     "bad.mlir:2:24: error: Operation scratchpad.allok is not registered"),
    ("undefined-value", "tela-opt", _func("  scratchpad.dealloc %zz : memref<4xf32, #scratchpad.space>\n"), [], 2,
     "bad.mlir:5:1: error: values used but not defined: [%zz]"),
    ("redefined-value", "tela-opt", _func(ALLOC + ALLOC), [], 2,
     "bad.mlir:3:3: error: SSA value %a is already defined"),
    ("integer-out-of-range", "tela-opt",
     _func("  %t = memref.subview %x[0, 99999999999999999999] [4, 16] [1, 1] : memref<8x16xf32> to "
           "memref<4x16xf32, strided<[16, 1], offset: ?>>\n", "%x: memref<8x16xf32>"), [], 2,
     "bad.mlir:2:51: error: Integer value 99999999999999999999 is out of range for type i64 which supports values "
     "in the range [-9223372036854775808, 18446744073709551616)"),
    ("float-out-of-range", "tela-opt", _func("  %c = arith.constant 4611686018427387904 : f16\n"), [], 2,
     "bad.mlir:2:23: error: literal out of range for its type (float too large to pack with e format)"),
    ("run-float-out-of-range", "tela-run", _func("  %c = arith.constant 4611686018427387904 : f16\n"), [], 2,
     "bad.mlir:2:23: error: literal out of range for its type (float too large to pack with e format)"),
    ("target-capacity-zero", "tela-opt", _small("capacity = 1024", "capacity = 0"), PIPELINE, 2,
     "bad.mlir:1:66: error: target capacity '0' must be positive (bytes)"),
    ("target-capacity-negative", "tela-opt", _small("capacity = 1024", "capacity = -5"), PIPELINE, 2,
     "bad.mlir:1:66: error: target capacity '-5' must be positive (bytes)"),
    ("target-capacity-beyond-64-bit", "tela-opt", _small("capacity = 1024", "capacity = 99999999999999999999"), PIPELINE, 2,
     "bad.mlir:1:66: error: target capacity '99999999999999999999' does not fit in 64 bits"),
    ("target-alignment-not-power-of-two", "tela-opt", _small("alignment = 16", "alignment = 3"), PIPELINE, 2,
     "bad.mlir:1:66: error: target alignment '3' must be a power of two (1, 2, 4, 8, ...)"),
    ("alloc-alignment-not-power-of-two", "tela-opt", _func(ALLOC.replace("alloc()", "alloc() align 48")), [], 2,
     "bad.mlir:2:3: error: 'scratchpad.alloc' op alignment '48' must be a power of two (1, 2, 4, 8, ...)"),
    ("alloc-negative-offset", "tela-opt", _func(ALLOC.replace("alloc()", "alloc() offset -4")), [], 2,
     "bad.mlir:2:3: error: 'scratchpad.alloc' op offset '-4' must not be negative (bytes)"),
    ("alloc-outside-the-scratchpad", "tela-opt", _func(ALLOC.replace(", #scratchpad.space", "")), [], 2,
     "bad.mlir:2:3: error: 'scratchpad.alloc' op result must be a memref in the scratchpad memory space, got "
     "'memref<4xf32>'; add '#scratchpad.space' as its memory space"),
    ("dynamic-shape-without-bound", "tela-opt",
     _func("  %a = scratchpad.alloc(%n) : memref<?xf32, #scratchpad.space>\n", "%n: index"), [], 2,
     "bad.mlir:2:3: error: 'scratchpad.alloc' op dynamic result type 'memref<?xf32, #scratchpad.space>' needs a "
     "declared upper bound; add 'bound <bytes>'"),
    ("dynamic-size-without-range", "tela-opt",
     _func("  %a = memref.alloc(%n) : memref<?xf32>\n  \"test.op\"(%a) : (memref<?xf32>) -> ()\n", "%n: index"),
     ["-p", "tela-plan{capacity=64}"], 2,
     "bad.mlir:1:1: error: pass 'tela-plan' failed: 'func.func' op '@f' has sizes that depend on 'n', which has no "
     "range; declare it with 'dims=n=LO..HI[@HINT]' or the argument attribute 'scratchpad.dim = \"n=LO..HI\"' "
     "(memref dimensions: 'scratchpad.dims')"),
    ("dynamic-size-not-followed", "tela-opt",
     _func("  %c0 = arith.constant 0 : index\n  %n = memref.load %m[%c0] : memref<1xindex>\n"
           "  %a = memref.alloc(%n) : memref<?xf32>\n", "%m: memref<1xindex>"),
     ["-p", "tela-plan{capacity=64}"], 2,
     "bad.mlir:4:3: error: pass 'tela-plan' failed: 'memref.alloc' op the size of buffer 'a' of dynamic type "
     "'memref<?xf32>' is not an expression of the function's dimensions: '%n' comes from 'memref.load'; compute it "
     "from index arguments and 'memref.dim' of arguments, or declare an upper bound with the attribute "
     "'scratchpad.bound = <bytes> : i64'"),
    ("pass-option-dims-invalid", "tela-opt", SMALL, ["-p", "tela-plan{dims=seq=8..2}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{dims=seq=8..2}': invalid dims: invalid dimension 'seq=8..2': "
     "the range '8..2' is empty: its lower end is above its upper end"),
    ("pass-option-dims-unknown-name", "tela-opt",
     _func("  %a = memref.alloc(%n) : memref<?xf32>\n  \"test.op\"(%a) : (memref<?xf32>) -> ()\n",
           '%n: index {scratchpad.dim = "seq=1..64"}'),
     ["-p", "tela-plan{capacity=1024 dims=sq=1..8}"], 2,
     "bad.mlir: error: pass 'tela-plan' failed: dims 'sq' names no symbolic dimension of the module's functions "
     "(did you mean 'seq'?); its symbolic dimensions are 'seq'"),
    ("pass-option-dims-unicode-digits", "tela-opt", SMALL, ["-p", "tela-plan{dims=n=٣..٤}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{dims=n=٣..٤}': invalid dims: invalid dimension 'n=٣..٤'; "
     "expected 'NAME=LO..HI[@HINT]' or 'NAME=VALUE', e.g. 'seq=1..2048@512'"),
    ("run-dynamic-capacity-exceeded", "tela-run",
     _func("  %a = memref.alloc(%n) : memref<?xf32>\n  %c0 = arith.constant 0 : index\n"
           "  %v = arith.constant 1.0 : f32\n  memref.store %v, %a[%c0] : memref<?xf32>\n",
           '%n: index {scratchpad.dim = "n=1..64"}').replace("@f", "@main"),
     ["--verify", "--capacity", "64", "--dim", "n=17"], 1,
     "bad.mlir:2:3: error: 'cf.assert' failed: scratchpad overflow in '@main': the arena at these sizes exceeds the "
     "capacity '64' B; it fits for n <= 16"),
    ("size-beyond-64-bit", "tela-opt", _func(ALLOC.replace("4xf32", "4611686018427387904xf32")), [], 2,
     "bad.mlir:2:3: error: 'scratchpad.alloc' op result type 'memref<4611686018427387904xf32, #scratchpad.space>' "
     "needs '18446744073709551616' bytes, which does not fit in 64 bits"),
    ("dma-shape-mismatch", "tela-opt", SMALL.replace("4x4xf32, #scratchpad.space", "4x0xf32, #scratchpad.space"), [], 2,
     "bad.mlir:5:5: error: 'scratchpad.dma' op source shape '4x4' differs from destination shape '4x0'"),
    ("capacity-below-load", "tela-opt", _small("capacity = 1024", "capacity = 63"), APART, 1,
     "bad.mlir:6:5: error: pass 'tela-pipeline' failed: 'scratchpad.kernel' op cannot plan '@main': 2 buffers live "
     "here (program point #3) need '128' B but capacity is '63' B; raise the capacity or shorten these lifetimes\n"
     "bad.mlir:3:5: note: buffer 'a' of '64' B, allocated here, is live at program point #3\n"
     "bad.mlir:4:5: note: buffer 'b' of '64' B, allocated here, is live at program point #3"),
    ("pass-option-capacity-negative", "tela-opt", SMALL, ["-p", "tela-plan{capacity=-1}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{capacity=-1}': invalid capacity '-1'; expected a positive "
     "number of bytes, e.g. 'capacity=1048576'"),
    ("pass-option-alignment-not-power-of-two", "tela-opt", SMALL, ["-p", "tela-plan{alignment=3}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{alignment=3}': invalid alignment '3'; expected a power of two "
     "in bytes, e.g. 'alignment=64'"),
    ("pass-option-html-not-html", "tela-opt", SMALL, ["-p", 'tela-plan{html="plan.svg"}'], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{html=\"plan.svg\"}': invalid html 'plan.svg'; expected a "
     "'.html' file path, e.g. 'html=plan.html'"),
    ("pass-option-unknown", "tela-opt", SMALL, ["-p", "tela-plan{bogus=1}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{bogus=1}': unknown option 'bogus' of 'tela-plan'; the options "
     "are 'capacity', 'alignment', 'mode', 'time-limit', 'algorithm', 'effort', 'dump-problem', 'report', 'report-file', "
     "'memory-space', 'plot', 'report-json', 'html', 'on-overflow', 'assign-memory', 'layout', 'lifetimes', 'inplace', 'dims'"),
    ("pass-option-on-overflow-invalid", "tela-opt", SMALL, ["-p", "tela-plan{on-overflow=later}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{on-overflow=later}': invalid on-overflow 'later'; expected "
     "'error' or 'spill'"),
    ("pass-option-inplace-invalid", "tela-opt", SMALL, ["-p", "tela-plan{inplace=always}"], 2,
     "tela-opt: error: invalid pass pipeline 'tela-plan{inplace=always}': invalid inplace 'always'; expected "
     "'none', 'declared', 'elementwise' or 'concat'"),
    ("spill-op-too-large", "tela-opt", SMALL, ["-p", "tela-pipeline{capacity=100 on-overflow=spill inplace=none}"], 1,
     "bad.mlir:6:5: error: pass 'tela-pipeline' failed: 'scratchpad.kernel' op needs '128' bytes for the buffers in "
     "use at this op ('a', 'b') but capacity is '100'; spilling cannot make an op's own buffers smaller (tiling is "
     "out of scope): split the op or raise the capacity"),
    ("unknown-pass", "tela-opt", SMALL, ["-p", "no-such-pass"], 2,
     "tela-opt: error: invalid pass pipeline 'no-such-pass': unknown pass 'no-such-pass'; run 'tela-opt --list-passes' "
     "to list the available passes"),
    ("missing-input-file", "tela-opt", None, [], 2,
     "tela-opt: error: cannot open input file 'bad.mlir': No such file or directory"),
    ("unwritable-output-file", "tela-opt", SMALL, ["-o", "missing/out.mlir"], 2,
     "tela-opt: error: cannot open output file 'missing/out.mlir': No such file or directory"),
    ("run-not-verifying", "tela-run", SMALL.replace("4x4xf32, #scratchpad.space", "4x0xf32, #scratchpad.space"), [], 2,
     "bad.mlir:5:5: error: 'scratchpad.dma' op source shape '4x4' differs from destination shape '4x0'"),
    ("run-empty-file", "tela-run", "", [], 2,
     "bad.mlir: error: no entry function: found 0 functions with a body (none) and none is '@main'; pass --entry NAME"),
    ("run-unknown-kernel", "tela-run", SMALL.replace('"relu"', '"nope"'), [], 2,
     "bad.mlir:6:5: error: unknown kernel 'nope'; the library has: abs, add, avgpool2d, batch-norm, clip, concat, conv2d, "
     "copy, div, erf, exp, fill, gemm, layer-norm, leaky-relu, log, lrn, matmul, "
     "max, maxpool2d, min, mul, neg, pow, reduce-mean, reduce-sum, relu, scale, sigmoid, softmax, sqrt, sub, tanh, transpose"),
    ("run-huge-argument", "tela-run", SMALL.replace("%x: memref<4x4xf32>", "%x: memref<4x100000000000xf32>")
     .replace("scratchpad.dma %x -> %a : memref<4x4xf32>", "scratchpad.dma %x -> %a : memref<4x100000000000xf32>")
     .replace("#scratchpad.space> -> memref<4x4xf32>", "#scratchpad.space> -> memref<4x4xf32>"), [], 2,
     "bad.mlir:5:5: error: 'scratchpad.dma' op source shape '4x100000000000' differs from destination shape '4x4'"),
    ("run-argument-beyond-memory", "tela-run", _func("", "%x: memref<100000000000xf32>").replace("@f", "@main"), [], 2,
     "bad.mlir:1:1: error: argument %x 'memref<100000000000xf32>' needs '400000000000' bytes, beyond the reference "
     "interpreter's limit of '1073741824' bytes per block; run the program on smaller shapes"),
    ("run-capacity-zero", "tela-run", SMALL, ["--capacity", "0"], 2,
     "tela-run: error: capacity '0' must be a positive number of bytes"),
    ("verify-capacity-beyond-64-bit", "tela-run", SMALL, ["--verify", "--capacity", "9223372036854775808"], 2,
     "tela-run: error: capacity '9223372036854775808' is beyond the 64-bit limit '9223372036854775807'"),
    ("run-unknown-entry", "tela-run", SMALL, ["--entry", "nope"], 2,
     "bad.mlir: error: no function '@nope' to run; functions with a body: '@main'"),
    ("run-negative-seed", "tela-run", SMALL, ["--seed", "-5"], 2,
     "tela-run: error: argument --seed: seed '-5' must not be negative; run 'tela-run --help' for usage"),
    ("run-seed-not-an-integer", "tela-run", SMALL, ["--seed", "x"], 2,
     "tela-run: error: argument --seed: seed 'x' is not an integer; run 'tela-run --help' for usage"),
    ("run-missing-inputs-file", "tela-run", SMALL, ["--inputs", "none.npy"], 2,
     "tela-run: error: cannot read input 'none.npy': No such file or directory"),
    ("run-empty-inputs-file", "tela-run", SMALL, ["--inputs", "empty.npy"], 2,
     "tela-run: error: cannot read input 'empty.npy': the file is empty; save each input with numpy.save"),
    ("run-text-as-npy", "tela-run", SMALL, ["--inputs", "text.npy"], 2,
     "tela-run: error: cannot read input 'text.npy': not a .npy file (it does not start with numpy's magic bytes "
     "'\\x93NUMPY'); save each input with numpy.save"),
    ("run-npz-as-inputs", "tela-run", SMALL, ["--inputs", "arrays.npz"], 2,
     "tela-run: error: cannot read input 'arrays.npz': it is a .npz archive of several arrays; pass one .npy file per "
     "input (save each input with numpy.save)"),
    ("run-object-array-inputs", "tela-run", SMALL, ["--inputs", "objects.npy"], 2,
     "tela-run: error: cannot read input 'objects.npy': it holds Python objects (dtype 'object'); save a numeric "
     "array"),
    ("run-truncated-npy", "tela-run", SMALL, ["--inputs", "truncated.npy"], 2,
     "tela-run: error: cannot read input 'truncated.npy': a damaged or truncated .npy file (Failed to read all data "
     "for array. Expected (4, 4) = 16 elements, could only read 14 elements. (file seems not fully written?)); save "
     "each input with numpy.save"),
    ("verify-capacity-below-load", "tela-run", SMALL, ["--verify", "--capacity", "100", "--inplace", "none"], 1,
     "bad.mlir:6:5: error: planning failed: cannot plan '@main': 2 buffers live here (program point #3) need '128' B "
     "but capacity is '100' B; raise the capacity or shorten these lifetimes"),
]


def run_tool(tool: str, arguments: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    main = tela_opt.main if tool == "tela-opt" else tela_run.main
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(arguments)
    return status, out.getvalue(), err.getvalue()


def _npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=allow_pickle)
    return stream.getvalue()


def _npz() -> bytes:
    stream = io.BytesIO()
    np.savez(stream, x=np.zeros((4, 4), np.float32))
    return stream.getvalue()


# `--inputs` files the cases name, written beside bad.mlir
INPUT_FILES = {
    "empty.npy": lambda: b"",
    "text.npy": lambda: b"1 2 3\n",
    "arrays.npz": _npz,
    "objects.npy": lambda: _npy(np.array([object()]), allow_pickle=True),
    "truncated.npy": lambda: _npy(np.zeros((4, 4), np.float32))[:-8],
}


def _write(path: Path, content) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("name, tool, content, arguments, exit_status, message", MLIR_CASES,
                         ids=[case[0] for case in MLIR_CASES])
def test_mlir_bad_input(name, tool, content, arguments, exit_status, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, content)
    for name, make in INPUT_FILES.items():
        if name in arguments:
            (tmp_path / name).write_bytes(make())
    output = ["-o", "out.mlir"] if tool == "tela-opt" and "-o" not in arguments else []
    status, out, err = run_tool(tool, [*arguments, FILE, *output])
    assert status == exit_status
    assert err == message + "\n"
    assert not (tmp_path / "out.mlir").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []
    if tool == "tela-opt":
        assert out == ""


# --------------------------------------------------------------------------------------
# Regression tests for the defects fixed in tela-opt, tela-run and the interpreter


def test_a_failing_run_leaves_an_existing_output_file_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, _small("capacity = 1024", "capacity = 63"))
    (tmp_path / "out.mlir").write_text("previous\n")
    status, _, err = run_tool("tela-opt", [*PIPELINE, FILE, "-o", "out.mlir"])
    assert status == 1 and LOCATED.match(err) and all(ATTACHED.match(line) for line in err.splitlines()[1:])
    assert (tmp_path / "out.mlir").read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE, "out.mlir"]


def test_split_input_with_one_failing_chunk_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, SMALL + "// -----\n" + _small("capacity = 1024", "capacity = 63"))
    status, _, err = run_tool("tela-opt", [*APART, "--split-input-file", FILE, "-o", "out.mlir"])
    assert status == 1 and err.startswith("bad.mlir:19:5: error: pass 'tela-pipeline' failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE]


def test_a_successful_run_replaces_the_output_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, SMALL)
    (tmp_path / "out.mlir").write_text("previous\n")
    status, _, err = run_tool("tela-opt", [*PIPELINE, FILE, "-o", "out.mlir"])
    assert status == 0, err
    assert "memref.view" in (tmp_path / "out.mlir").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE, "out.mlir"]


@pytest.mark.parametrize("text", ["", "\n\n", "// only a comment\n", "!t = memref<4xf32>\n"])
def test_input_without_operations_is_an_empty_module(text, tmp_path, monkeypatch):
    """As mlir-opt: a file (or a split chunk, e.g. after a trailing `// -----`) with no op."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, text)
    status, out, err = run_tool("tela-opt", [*PIPELINE, FILE])
    assert (status, out, err) == (0, "builtin.module {\n}\n\n", "")


def test_a_trailing_split_marker_is_harmless(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, SMALL + "// -----\n")
    status, out, err = run_tool("tela-opt", [*PIPELINE, "--split-input-file", FILE])
    assert status == 0, err
    assert out.endswith("// -----\nbuiltin.module {\n}\n\n")


def test_tela_run_locates_verification_failures_like_tela_opt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / FILE, _func(ALLOC.replace("alloc()", "alloc() align 48")).replace("@f", "@main"))
    opt = run_tool("tela-opt", [FILE])
    run = run_tool("tela-run", [FILE])
    assert opt[0] == run[0] == 2
    assert opt[2] == run[2] == "bad.mlir:2:3: error: 'scratchpad.alloc' op alignment '48' must be a power of two (1, 2, 4, 8, ...)\n"


@pytest.mark.parametrize("tool", ["tela-opt", "tela-run"])
def test_an_operand_defined_inside_its_own_op_is_reported(tool, tmp_path, monkeypatch):
    """xDSL's parser leaves a forward-declared value behind (its verifier then crashes)."""
    monkeypatch.chdir(tmp_path)
    body = ("  %c0 = arith.constant 0 : index\n  %c4 = arith.constant 4 : index\n"
            "  scf.for %k = %c0 to %c4 step %k {\n  }\n")
    _write(tmp_path / FILE, _func(body).replace("@f", "@main"))
    status, out, err = run_tool(tool, [FILE])
    assert (status, out) == (2, "")
    assert err == ("bad.mlir:4:3: error: 'scf.for' op operand #2 is used before it is defined (it is defined inside "
                   "the op); define it before the op, in the same or an enclosing block\n")


@pytest.mark.parametrize("tool", ["tela-opt", "tela-run"])
def test_a_use_outside_the_defining_region_is_reported(tool, tmp_path, monkeypatch):
    """xDSL does not check dominance; the interpreter used to crash with a KeyError."""
    monkeypatch.chdir(tmp_path)
    body = ("  %c0 = arith.constant 0 : index\n  %c4 = arith.constant 4 : index\n  %c1 = arith.constant 1 : index\n"
            "  scf.for %i = %c0 to %c4 step %c1 {\n"
            "    %x = memref.load %a[%k] : memref<4xf32>\n"
            "    scf.for %k = %c0 to %c4 step %c1 {\n      memref.store %x, %a[%k] : memref<4xf32>\n    }\n  }\n")
    _write(tmp_path / FILE, _func(body, "%a: memref<4xf32>").replace("@f", "@main"))
    status, out, err = run_tool(tool, [FILE])
    assert (status, out) == (2, "")
    assert err == ("bad.mlir:6:5: error: 'memref.load' op operand #1 ('%k') does not dominate this use; define it "
                   "before the op, in the same or an enclosing block\n")


@pytest.mark.parametrize("step", ["0", "-1"])
def test_a_loop_step_that_is_not_positive_is_reported(step, tmp_path, monkeypatch):
    """xDSL's interpreter raised ValueError for step 0 (range) and counted down for step < 0."""
    monkeypatch.chdir(tmp_path)
    body = (f"  %c0 = arith.constant 0 : index\n  %c4 = arith.constant 4 : index\n  %s = arith.constant {step} : index\n"
            "  scf.for %i = %c0 to %c4 step %s {\n  }\n")
    _write(tmp_path / FILE, _func(body).replace("@f", "@main"))
    status, out, err = run_tool("tela-run", [FILE])
    assert (status, out) == (2, "")
    assert err == f"bad.mlir:5:3: error: 'scf.for' step is '{step}'; the step must be positive\n"


def test_a_huge_scratchpad_buffer_is_refused_before_it_exhausts_the_host(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = "  %a = scratchpad.alloc() : memref<1000000000000xi8, #scratchpad.space>\n  scratchpad.dealloc %a : memref<1000000000000xi8, #scratchpad.space>\n"
    _write(tmp_path / FILE, _func(body).replace("@f", "@main"))
    status, out, err = run_tool("tela-run", [FILE])
    assert status == 2 and out == ""
    assert err == ("bad.mlir:2:3: error: private storage of 'a' needs '1000000000000' bytes, beyond the reference "
                   "interpreter's limit of '1073741824' bytes per block; run the program on smaller shapes\n")


# --------------------------------------------------------------------------------------
# The mutation fuzzer

CORPUS = [SMALL] + [(EXAMPLES / f"{name}.mlir").read_text() for name in
                    ("mlp", "conv_relu_pool", "attention", "residual_loop", "upstream_loops")]
HOSTILE_INTEGERS = ["0", "1", "3", "48", "-1", "-4096", "4611686018427387904", "9223372036854775807",
                    "9223372036854775808", "18446744073709551616", "99999999999999999999"]
TYPES = ["f32", "f16", "bf16", "f64", "i1", "i7", "i8", "i32", "i64", "index", "complex<f32>", "vector<4xf32>",
         "tensor<4xf32>", "!foo.bar", "none"]
KERNEL_NAMES = ['"copy"', '"fill"', '"add"', '"matmul"', '"relu"', '"softmax"', '"conv2d"', '"maxpool2d"',
                '"transpose"', '"reduce-sum"', '"nope"', '""']
STRAY = ["\x00", "\xff", "{", "}", "(", ")", "%", "@", '"', "//", "// -----\n", "<", ">", ":", ",", "\n}\n",
         "#scratchpad.space", "scratchpad.dealloc %a : memref<4xf32, #scratchpad.space>\n", "\n// -----\n"]
INTEGER = re.compile(r"(?<![%\w#.])\d+(?![\w.])")
SSA = re.compile(r"%[A-Za-z_][\w]*")
TYPE_WORD = re.compile(r"\b(f16|f32|f64|bf16|i1|i8|i32|i64|index)\b")


def mutate(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    kind = rng.randrange(12)
    if kind == 0:
        return text[: rng.randrange(len(text))]
    if kind == 1 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif kind == 2:
        row = rng.randrange(len(lines))
        lines.insert(row, lines[row])
    elif kind == 3 and len(lines) > 1:
        row = rng.randrange(len(lines) - 1)
        lines[row], lines[row + 1] = lines[row + 1], lines[row]
    elif kind == 4:
        return _replace_one(rng, INTEGER, text, lambda: rng.choice(HOSTILE_INTEGERS))
    elif kind == 5:
        return _replace_one(rng, TYPE_WORD, text, lambda: rng.choice(TYPES))
    elif kind == 6:
        names = sorted(set(SSA.findall(text)))
        return _replace_one(rng, SSA, text, lambda: rng.choice(names)) if names else text
    elif kind == 7:
        return _replace_one(rng, re.compile(r", #scratchpad\.space"), text, lambda: "")
    elif kind == 8:
        return _replace_one(rng, re.compile(r'"[a-z0-9-]+"(?= ins| outs)'), text, lambda: rng.choice(KERNEL_NAMES))
    elif kind == 9:
        where = rng.randrange(len(text) + 1)
        return text[:where] + rng.choice(STRAY) + text[where:]
    elif kind == 10:
        return _replace_one(rng, re.compile(r"capacity = \d+"), text, lambda: f"capacity = {rng.choice([1, 64, 500, 900, 2000, 3000, 5000, 40000])}")
    else:
        return _replace_one(rng, re.compile(r"scratchpad\.alloc\(\)"), text,
                            lambda: f"scratchpad.alloc() {rng.choice(['align ', 'offset '])}{rng.choice(['1', '3', '8', '64', '4096', '-8'])}")
    return "\n".join(lines)


def _replace_one(rng: random.Random, pattern: re.Pattern, text: str, replacement) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    match = rng.choice(matches)
    return text[: match.start()] + replacement() + text[match.end():]


def runs_long(text: str) -> bool:
    """A loop bound or a shape that makes the interpreter run for minutes (not an error)."""
    return any(int(number) > 4096 for number in re.findall(r"arith\.constant (\d+) : index", text)) or bool(
        re.search(r"\d{7,}x|x\d{7,}|<\d{7,}x|<\d{7,}x", text))


def check_opt(tmp_path: Path, text: str, pipeline: list[str], split: bool = False) -> str:
    """With ``split``, every failing chunk reports one line of its own."""
    (tmp_path / "out.mlir").write_text("sentinel\n")
    status, out, err = run_tool("tela-opt", [*pipeline, *(["--split-input-file"] if split else []), FILE, "-o", "out.mlir"])
    assert status in (0, 1, 2, 3) and out == "", (status, out)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []
    if status != 0:
        chunks = text.count("// -----") + 1 if split else 1
        lines = [line for line in err.splitlines() if not ATTACHED.match(line)]
        assert err.endswith("\n") and 1 <= len(lines) <= chunks, repr(err)
        for line in lines:
            assert LOCATED.match(line) or line.startswith("tela-opt: error: "), repr(err)
        assert (tmp_path / "out.mlir").read_text() == "sentinel\n"
        return "error"
    assert all(ATTACHED.match(line) for line in err.splitlines()), repr(err)
    written = (tmp_path / "out.mlir").read_text()
    assert written != "sentinel\n"
    (tmp_path / "round.mlir").write_text(written)
    again = run_tool("tela-opt", [*(["--split-input-file"] if split else []), "round.mlir"])
    assert again[0] == 0 and again[2] == "", f"the output does not parse again: {again[2]!r}"
    return "ok"


def check_run(tmp_path: Path, text: str) -> str:
    status, out, err = run_tool("tela-run", [FILE])
    assert status in (0, 1, 2)
    if status != 0:
        assert out == "" and err.count("\n") == 1 and (LOCATED.match(err) or err.startswith("tela-run: error: ")), repr(err)
        return "error"
    assert err == ""
    status, out, err = run_tool("tela-run", ["--verify", FILE])
    if status in (1, 2, 3) and out == "":
        assert err.count("\n") == 1 and LOCATED.match(err) and "planning failed" in err, repr(err)
        return "ran, planning failed"
    assert status == 0 and err == "" and out.splitlines()[-1].startswith("verify: ok: "), f"verify failed: {out}{err}"
    return "ran and verified"


@pytest.mark.slow
def test_mutated_mlir_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = random.Random(FUZZ_SEED)
    outcomes: dict[str, int] = {}
    for trial in range(MUTANTS):
        text = rng.choice(CORPUS)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            text = mutate(rng, text)
        # a stray "\xff" becomes a raw 0xff byte: not UTF-8
        (tmp_path / FILE).write_bytes(text.encode("utf-8").replace("\xff".encode("utf-8"), b"\xff"))
        pipeline = PIPELINE if rng.random() < 0.5 else ["-p", "tela-pipeline{mode=minimize}"]
        try:
            opt = check_opt(tmp_path, text, pipeline, split="// -----" in text and rng.random() < 0.7)
            run = "skipped (long loops)" if runs_long(text) else check_run(tmp_path, text)
        except Exception as failure:  # an escaping exception is a defect too: show its input
            raise AssertionError(f"trial {trial}: {type(failure).__name__}: {failure}\n--- input ---\n{text}") from failure
        key = f"opt {opt}, run {run}"
        outcomes[key] = outcomes.get(key, 0) + 1
    print(f"{MUTANTS} mutated programs: {dict(sorted(outcomes.items()))}")
    assert sum(count for key, count in outcomes.items() if "verified" in key) > MUTANTS // 10, outcomes
    assert sum(count for key, count in outcomes.items() if key.startswith("opt error")) > MUTANTS // 4, outcomes


# --------------------------------------------------------------------------------------
# The catalogue in docs/errors.md


def test_the_catalogue_documents_every_mlir_case():
    path = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| class") :
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            rows[cells[-1].strip("`")] = cells
    for name, _, _, _, exit_status, message in MLIR_CASES:
        test_id = f"test_fuzz_mlir.py::test_mlir_bad_input[{name}]"
        assert test_id in rows, f"docs/errors.md has no row for {test_id}"
        row = rows[test_id]
        assert row[2] == str(exit_status)
        error = message.split("\n")[0]  # the error line; its notes are described in the row's class
        assert row[1].strip("`").replace("\\|", "|") == error, f"{name}: the docs show {row[1]!r}"
