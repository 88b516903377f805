"""Random scratchpad programs, planned at tight capacities and verified by the interpreter.

The generator (`program_generator.py`) writes programs as text: straight-line code and
nests of `scf.for` and `scf.if`, buffers of several shapes and alignments allocated at any
depth or hoisted to the entry, in the scratchpad dialect or as plain upstream memref IR;
a program only reads what it wrote (the reference run would reject it otherwise).

Each program is planned twice: in minimize mode to learn its LOAD and optimal peak, then
at the tightest capacity that can be proved feasible (LOAD when it packs, else the optimal
peak), where every byte counts. `verify_program` runs it before and after planning:
outputs must be bit-identical and the shadow memory must see no read of bytes another
live buffer wrote. The seeded loop is deterministic; its size grows with
``HYPOTHESIS_PROFILE=long``; a hypothesis test draws generator seeds as well.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.runtime.interp import InterpreterError
from telamalloc.verification import verify_program


def _load_generator():
    """`program_generator.py` by path (the tests run with `--import-mode=importlib`)."""
    name = "telamalloc_program_generator"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("program_generator.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


program_generator = _load_generator()
ProgramGenerator = program_generator.ProgramGenerator  # test_spill_programs and cpu_reference use these
generate = program_generator.generate
memref = program_generator.memref

HARDENING = settings.get_profile("hardening")
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROGRAMS = 2000 if LONG else 60

def plan_and_verify(text: str) -> str:
    """Plan at the tightest provable capacity and verify; return which capacity it was."""
    module = parse_program(make_context(), text, "random.mlir")
    probe = module.clone()
    plans = plan_module(probe, mode="minimize")
    assert len(plans) <= 1
    if not plans:  # no buffer: nothing to plan, the program must still run the same
        report = verify_program(module)
        assert report.ok, "\n".join(report.lines())
        return "no buffers"
    solution = plans[0].solution
    assert solution.optimal, solution.message
    tightest = solution.load if solution.peak == solution.load else solution.peak
    report = verify_program(module, tightest)
    assert report.ok, "\n".join(report.lines())
    assert report.arena_bytes <= tightest
    if tightest > solution.load:
        # one byte less than the optimum must fail to plan, with a one-line diagnostic
        with pytest.raises(InterpreterError, match="planning failed"):
            verify_program(module, tightest - 1)
        return "at the optimal peak (above LOAD)"
    return "at LOAD"


def test_random_programs_plan_at_load_and_verify():
    outcomes: dict[str, int] = {}
    for seed in range(PROGRAMS):
        text = generate(seed)
        try:
            outcome = plan_and_verify(text)
        except (AssertionError, InterpreterError) as failure:
            raise AssertionError(f"seed {seed}: {failure}\n--- program ---\n{text}") from None
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"{PROGRAMS} random programs: {outcomes}")
    assert outcomes.get("at LOAD", 0) > PROGRAMS // 2, outcomes


@pytest.mark.slow
@HARDENING
@given(st.integers(10**6, 10**9))
def test_random_programs_from_drawn_seeds(seed):
    text = generate(seed)
    try:
        plan_and_verify(text)
    except InterpreterError as failure:
        raise AssertionError(f"{failure.message}\n--- program ---\n{text}") from None


def test_the_generator_covers_loops_branches_and_deallocs():
    texts = [generate(seed) for seed in range(PROGRAMS)]
    for construct in ("scf.for", "scf.if", "} else {", "scratchpad.dealloc", '"matmul"', "align 64"):
        assert sum(construct in text for text in texts) >= PROGRAMS // 10, construct
    assert sum("arith.cmpi" in text for text in texts) >= PROGRAMS // 20  # an scf.if inside a loop


# --------------------------------------------------------------------------------------
# Hoisted allocations and plain upstream memref programs: lifetimes from the first write


HOISTED = 200 if LONG else 30


def _check(text: str, seed: int) -> str:
    try:
        return plan_and_verify(text)
    except (AssertionError, InterpreterError) as failure:
        raise AssertionError(f"seed {seed}: {failure}\n--- program ---\n{text}") from None


@pytest.mark.parametrize("upstream", [False, True], ids=["scratchpad", "upstream"])
def test_hoisted_programs_plan_at_load_and_verify(upstream):
    """Every allocation at the entry: first writes in loops and branches, reads carried
    across iterations, reads that come before any write. A lifetime that starts too late
    shows as a shadow violation or a differing output."""
    outcomes: dict[str, int] = {}
    for seed in range(HOISTED):
        outcome = _check(generate(seed, hoist=1.0 if seed % 2 else 0.6, upstream=upstream), seed)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"{HOISTED} hoisted programs: {outcomes}")
    assert outcomes.get("at LOAD", 0) > HOISTED // 2, outcomes


def test_upstream_programs_plan_at_load_and_verify():
    outcomes: dict[str, int] = {}
    for seed in range(HOISTED):
        outcome = _check(generate(seed, upstream=True), seed)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("at LOAD", 0) > HOISTED // 2, outcomes


def _load(text: str, lifetimes: str) -> int:
    plans = plan_module(parse_program(make_context(), text, "random.mlir"), mode="minimize", lifetimes=lifetimes)
    return plans[0].solution.load if plans else 0


def test_first_write_lifetimes_undo_the_cost_of_hoisting():
    """Hoisting raises LOAD from the allocations; from the first write it costs (almost)
    nothing: never more than the program as written, and at most the allocation rule's."""
    lower = 0
    for seed in range(HOISTED):
        written = generate(seed)
        hoisted = generate(seed, hoist=1.0)
        first_write, alloc = _load(hoisted, "first-write"), _load(hoisted, "alloc")
        assert first_write <= alloc, seed
        assert _load(written, "first-write") <= _load(written, "alloc"), seed
        lower += first_write < alloc
    assert lower >= HOISTED // 2, lower


def test_hoisted_programs_verify_with_the_allocation_rule_too():
    for seed in range(0, HOISTED, 3):
        text = generate(seed, hoist=0.6, upstream=seed % 2 == 1)
        report = verify_program(parse_program(make_context(), text, "random.mlir"), lifetimes="alloc")
        assert report.ok, f"seed {seed}:\n" + "\n".join(report.lines())


def test_the_hoisting_generator_covers_what_it_promises():
    texts = [generate(seed, hoist=1.0, upstream=seed % 2 == 1) for seed in range(HOISTED)]
    for text in texts:
        body = text.split("%false = arith.constant false\n")[1]
        # every buffer of the program at the entry (a row loop's own temporaries aside)
        allocations = [line for line in body.splitlines() if re.match(r" *%b\d+ = \S+alloc\(", line)]
        assert body.splitlines()[: len(allocations)] == allocations
    assert sum("scf.if %false {" in text for text in texts) >= HOISTED // 4  # reads before any write
    assert sum("arith.cmpi ugt" in text for text in texts) >= HOISTED // 4  # reads carried across iterations
    assert sum("memref.store" in text for text in texts) >= HOISTED // 4  # upstream loop nests
    rows = [generate(seed, hoist=0.6, upstream=True) for seed in range(HOISTED)]
    # a row loop holding an allocation: its rows must survive the body's buffers
    assert sum(re.search(r"scf.for %i\d+ = %c0 to %c[248] step %c1 \{\n(.*\n)*? +%t\d+ = memref.alloc", text) is not None
               for text in rows) >= HOISTED // 4


@pytest.mark.parametrize("seed", [23, 27, 36, 0, 1, 2])
def test_random_programs_verify_in_place(seed):
    # Generated programs planned with `inplace=elementwise` (seeds 23, 27 and 36 have
    # kernels whose output takes the bytes of a dying input; the others none) run to the
    # same outputs with no shadow violation, and in place never needs more bytes.
    from telamalloc.passes.tela_plan import collect_module
    from telamalloc.runtime.alloc.validate import compute_load

    module = parse_program(make_context(), generate(seed), "random.mlir")
    loads = {rule: sum(compute_load(problem.problem())[0] for problem in collect_module(module, inplace=rule))
             for rule in ("none", "elementwise")}
    assert loads["elementwise"] <= loads["none"]
    report = verify_program(module, inplace="elementwise")
    assert report.ok, report.lines()


def test_random_programs_with_concatenations_verify_in_place():
    # Generated programs with concatenations (a quarter of the statements; along the
    # outermost axis in place, along axis 1 of 4x4 parts copied) planned with
    # `inplace=concat`, the default, run to the same outputs with no shadow violation and
    # never need more bytes than with `elementwise`; some parts do sit in their slices.
    from telamalloc.passes.tela_plan import collect_module
    from telamalloc.runtime.alloc.validate import compute_load

    in_slices = 0
    for seed in range(12):
        text = generate(seed, concat=0.25)
        module = parse_program(make_context(), text, "random.mlir")
        loads = {}
        for rule in ("elementwise", "concat"):
            problems = collect_module(module, inplace=rule)
            loads[rule] = sum(compute_load(problem.problem())[0] for problem in problems)
        in_slices += sum(member.delta > 0 for problem in problems for buffer in problem.buffers
                         for member in (buffer, *buffer.members))
        assert loads["concat"] <= loads["elementwise"], seed
        report = verify_program(module)
        assert report.ok, (seed, report.lines())
    assert in_slices >= 10  # 18 second parts in their slices over these seeds
