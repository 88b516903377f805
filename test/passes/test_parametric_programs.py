"""Parametric plans proved by execution: random straight-line programs whose buffer sizes
are expressions of two dimensions, planned once (tela-plan), lowered with the offsets
computed at run time (tela-lower), and run by the interpreter with shadow memory at
several sizes, before and after planning (`verify_program`)."""

import random

import numpy as np
import pytest

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.planning.parametric import ALTERNATIVES_ATTR
from telamalloc.passes.tela_pipeline import TelaPipelinePass
from telamalloc.passes.tela_plan import collect_module
from telamalloc.runtime.alloc.parametric import SymbolRange, sample_sizes
from telamalloc.runtime.interp import InterpreterError, run_program
from telamalloc.verification import verify_program

SIZES = [
    "  %s{i} = arith.muli %n, %m : index\n",  # n*m elements
    "  %s{i} = arith.ceildivui %n, %c2 : index\n",  # ceildiv(n, 2)
    "  %h{i} = arith.divui %m, %c2 : index\n  %s{i} = arith.addi %h{i}, %c3 : index\n",  # m/2 + 3
    "  %s{i} = arith.addi %n, %c3 : index\n",  # n + 3
    "  %s{i} = arith.muli %n, %n : index\n",  # n*n
]


def random_program(seed: int, count: int = 14) -> str:
    """Buffers written at a random point and read at a later one (one element each, at
    index 0: enough to put every buffer's bytes under the shadow memory's watch), their
    values summed into %out."""
    rng = random.Random(seed)
    events: list[tuple[int, int, str]] = []
    lines = ["  %c0 = arith.constant 0 : index\n  %c2 = arith.constant 2 : index\n  %c3 = arith.constant 3 : index\n"]
    for i in range(count):
        lines.append(SIZES[rng.randrange(len(SIZES))].format(i=i))
        lines.append(f"  %b{i} = memref.alloc(%s{i}) : memref<?xf32>\n")
        start = rng.randrange(0, 2 * count)
        events.append((start, 0, f"  %w{i} = arith.constant {i + 1}.0 : f32\n  memref.store %w{i}, %b{i}[%c0] : memref<?xf32>\n"))
        events.append((start + rng.randrange(1, 6), 1, f"  %r{i} = memref.load %b{i}[%c0] : memref<?xf32>\n"
                       f"  %t{i} = memref.load %out[%c0] : memref<1xf32>\n  %u{i} = arith.addf %t{i}, %r{i} : f32\n"
                       f"  memref.store %u{i}, %out[%c0] : memref<1xf32>\n"))
    for _, _, text in sorted(events, key=lambda event: (event[0], event[1])):
        lines.append(text)
    arguments = '%n: index {scratchpad.dim = "n=1..64@16"}, %m: index {scratchpad.dim = "m=1..512@32"}, %out: memref<1xf32>'
    return f"func.func @main({arguments}) {{\n{''.join(lines)}  func.return\n}}\n"


def planned_placements(text: str) -> int:
    module = parse_program(make_context(), text, "random.mlir")
    TelaPipelinePass(mode="minimize").run(module)
    func = next(op for op in module.walk() if op.name == "func.func")
    alternatives = func.attributes.get(ALTERNATIVES_ATTR)
    return 1 + (len(alternatives.data) if alternatives is not None else 0)


@pytest.mark.parametrize("seed", range(3))
def test_random_parametric_programs_verify_at_several_sizes(seed):
    text = random_program(seed)
    module = parse_program(make_context(), text, "random.mlir")
    (problem,) = collect_module(module.clone())
    assert problem.parametric and problem.ranges["n"].hi == 64
    sizes = [{"n": 1, "m": 1}, {"n": 5, "m": 17}, {"n": 16, "m": 32}, {"n": 64, "m": 3}, {"n": 33, "m": 512}]
    for env in sizes:
        report = verify_program(module, dims=env)
        assert report.ok, (env, report.lines())


def test_several_placements_are_chosen_between_at_run_time():
    # A program whose plan keeps more than one placement: the lowered code computes each
    # placement's peak and selects the smaller one's offsets (arith.cmpi + arith.select).
    seed = next(seed for seed in range(40) if planned_placements(random_program(seed, 18)) > 1)
    text = random_program(seed, 18)
    module = parse_program(make_context(), text, "random.mlir")
    lowered = module.clone()
    TelaPipelinePass(mode="minimize").run(lowered)
    assert any(op.name == "arith.select" for op in lowered.walk())
    envs = sample_sizes({"n": SymbolRange(1, 64, 16), "m": SymbolRange(1, 512, 32)}, count=6)
    for env in envs:
        report = verify_program(module, dims=env)
        assert report.ok, (seed, env, report.lines())


def test_one_name_on_two_dimensions_is_checked_at_run_time():
    # %n and the rows of %x are both 'seq': the sizes come from %n, so rows that disagree
    # stop the lowered program before any view could outgrow its bytes.
    text = (
        'func.func @main(%n: index {scratchpad.dim = "seq=1..16"}, %x: memref<?xf32> {scratchpad.dims = ["seq"]}) {\n'
        "  %c0 = arith.constant 0 : index\n"
        "  %a = memref.alloc(%n) : memref<?xf32>\n"
        "  %v = memref.load %x[%c0] : memref<?xf32>\n"
        "  memref.store %v, %a[%c0] : memref<?xf32>\n"
        "  func.return\n}\n"
    )
    module = parse_program(make_context(), text, "same.mlir")
    TelaPipelinePass(mode="minimize").run(module)
    run_program(module, inputs=[np.asarray(4), np.ones(4, np.float32)])  # agree: runs
    with pytest.raises(InterpreterError, match="the dimensions named 'seq' of '@main' differ at run time"):
        run_program(module, inputs=[np.asarray(4), np.ones(5, np.float32)])
