"""Prints a SHA-256 of every number the reference interpreter computes, one line per case.

Run by test_cpu_settings.py in a subprocess under several CPU settings (OpenBLAS core
types, numpy dispatch targets switched off); the outputs must be byte-identical. Cases:
every example (before planning and after tela-pipeline), each library kernel on random
operands of every float width and int32 (shapes large enough for BLAS to block), `exp`
over its whole range, and random programs from test_random_programs.py's generator.
The first line names the setting in force, as numpy and OpenBLAS report it.

    python cpu_reference.py [PROGRAMS]
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.runtime.interp import detmath, run_program
from telamalloc.runtime.interp.kernels import run_kernel
from telamalloc.verification import plan_and_lower

ROOT = Path(__file__).resolve().parents[2]


def digest(*arrays: np.ndarray) -> str:
    hasher = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        hasher.update(f"{array.dtype}{array.shape}".encode())
        hasher.update(array.tobytes())
    return hasher.hexdigest()[:32]


def openblas_core() -> str:
    """The OpenBLAS kernel set numpy's BLAS runs here ('none' without OpenBLAS)."""
    libraries = [line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                 if "openblas" in line.lower() and line.split()[-1].endswith(".so")]
    for path in dict.fromkeys(libraries):
        library = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            function = getattr(library, symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return "none"


def cpu_setting() -> str:
    from numpy._core._multiarray_umath import __cpu_features__

    enabled = [name for name in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR") if __cpu_features__.get(name)]
    return f"openblas={openblas_core()} numpy={','.join(enabled) or 'baseline'}"


def example_cases() -> list[tuple[str, str]]:
    cases = []
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        module = parse_program(make_context(), path.read_text(), str(path))
        before = run_program(module)
        lowered = module.clone()
        plan_and_lower(lowered, None, "spill")  # spill.mlir needs it; the others fit as they are
        after = run_program(lowered)
        cases.append((f"example {path.name}", digest(*(output.value for output in before.outputs))))
        cases.append((f"example {path.name} planned", digest(*(output.value for output in after.outputs))))
    return cases


def kernel_cases() -> list[tuple[str, str]]:
    rng = np.random.default_rng(2026)
    cases = []
    for dtype in (np.float16, np.float32, np.float64, np.int32):
        def operand(*shape: int) -> np.ndarray:
            if np.dtype(dtype).kind == "i":
                return rng.integers(-50, 50, size=shape).astype(dtype)
            return rng.uniform(-4.0, 4.0, size=shape).astype(dtype)

        calls = [
            ("matmul", [operand(37, 129), operand(129, 23)], (37, 23), {}),
            ("matmul", [operand(64, 64), operand(64, 64)], (64, 64), {}),
            ("conv2d", [operand(2, 5, 11, 11), operand(7, 5, 3, 3), operand(7)], (2, 7, 6, 6),
             {"stride": 2, "padding": 1}),
            ("reduce-sum", [operand(33, 257)], (33,), {"axis": 1}),
            ("reduce-sum", [operand(257, 9)], (1, 9), {"axis": 0}),
            ("add", [operand(16, 31), operand(31)], (16, 31), {}),
            ("mul", [operand(16, 31), operand(16, 31)], (16, 31), {}),
            ("scale", [operand(100)], (100,), {"factor": 0.3}),
            ("maxpool2d", [operand(1, 3, 8, 8)], (1, 3, 4, 4), {}),
        ]
        calls += [
            ("matmul", [operand(3, 17, 40), operand(40, 9)], (3, 17, 9), {}),
            ("gemm", [operand(40, 17), operand(9, 40), operand(9)], (17, 9), {"trans_a": 1, "trans_b": 1}),
            ("conv2d", [operand(1, 6, 12, 11), operand(4, 3, 3, 2), operand(4)], (1, 4, 7, 11),
             {"stride": [2, 1], "padding": [1, 0, 2, 1], "dilation": [1, 1], "groups": 2}),
            ("maxpool2d", [operand(1, 3, 9, 9)], (1, 3, 5, 5), {"window": 3, "stride": 2, "padding": 1, "ceil_mode": 1}),
            ("add", [operand(16, 31), operand(31), operand(16, 1)], (16, 31), {}),
            ("concat", [operand(2, 3), operand(2, 5)], (2, 8), {"axis": 1}),
            ("reduce-sum", [operand(9, 33, 17)], (33,), {"axes": [0, 2]}),
        ]
        if np.dtype(dtype).kind == "f":
            calls.append(("softmax", [operand(19, 130) * 8], (19, 130), {"axis": 1}))
            calls.append(("softmax", [operand(130, 19)], (130, 19), {"axis": 0}))
            calls += [
                ("softmax", [operand(4, 7, 9) * 8], (4, 7, 9), {"axis": 1, "trailing": 1}),
                ("avgpool2d", [operand(2, 3, 9, 9)], (2, 3, 5, 5), {"window": 3, "stride": 2, "padding": 1}),
                ("reduce-mean", [operand(2, 3, 13, 13)], (2, 3, 1, 1), {"axes": [2, 3]}),
                ("batch-norm", [operand(2, 5, 4, 4), operand(5), operand(5), operand(5), operand(5) ** 2 + 0.1],
                 (2, 5, 4, 4), {"epsilon": 1e-3}),
                ("lrn", [operand(2, 7, 5, 5)], (2, 7, 5, 5), {"size": 5, "alpha": 0.3, "beta": 0.75, "bias": 2.0}),
                ("layer-norm", [operand(6, 65), operand(65), operand(65)], (6, 65), {"epsilon": 1e-5}),
                ("div", [operand(16, 31), operand(16, 31) ** 2 + 0.5], (16, 31), {}),
                ("pow", [np.abs(operand(16, 31)) + 0.1, operand(16, 31)], (16, 31), {}),
                ("sigmoid", [operand(300) * 4], (300,), {}),
                ("tanh", [operand(300)], (300,), {}),
                ("erf", [operand(300)], (300,), {}),
                ("leaky-relu", [operand(300)], (300,), {"alpha": 0.1}),
            ]
        for name, ins, shape, params in calls:
            out = np.zeros(shape, dtype=dtype)
            run_kernel(name, ins, [out], params)
            cases.append((f"kernel {name} {np.dtype(dtype)} {'x'.join(map(str, shape))}", digest(out)))
    grid = np.linspace(-800.0, 800.0, 200_001)
    for dtype in (np.float16, np.float32, np.float64):
        cases.append((f"exp {np.dtype(dtype)}", digest(detmath.exp(grid.astype(dtype)))))
    return cases


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def random_program_cases(count: int) -> list[tuple[str, str]]:
    _load("conftest")  # registers the hypothesis profile the generator's module reads
    random_programs = _load("test_random_programs")
    cases = []
    for seed in range(count):
        module = parse_program(make_context(), random_programs.generate(seed), f"program {seed}")
        result = run_program(module)
        cases.append((f"program {seed}", digest(*(output.value for output in result.outputs))))
    return cases


def main() -> None:
    programs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(f"setting {cpu_setting()}")
    for name, value in example_cases() + kernel_cases() + random_program_cases(programs):
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
