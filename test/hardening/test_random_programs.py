"""Random scratchpad programs, planned at tight capacities and verified by the interpreter.

A generator writes programs in the scratchpad dialect as text: straight-line code and
nests of `scf.for` (trip counts 1-3) and `scf.if` (on the loop counter or a constant),
buffers of several shapes and alignments allocated at any depth, data moved in by `dma`,
computed by library kernels (elementwise, unary, fill, matmul), moved out by `dma`, freed
by an explicit `dealloc` or by their last use. The generator tracks which buffers hold
data, so a program only reads what it wrote (the reference run would reject it otherwise).

Each program is planned twice: in minimize mode to learn its LOAD and optimal peak, then
at the tightest capacity that can be proved feasible (LOAD when it packs, else the optimal
peak), where every byte counts. `verify_program` runs it before and after planning:
outputs must be bit-identical and the shadow memory must see no read of bytes another
live buffer wrote. The seeded loop is deterministic; its size grows with
``HYPOTHESIS_PROFILE=long``; a hypothesis test draws generator seeds as well.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.runtime.interp import InterpreterError
from telamalloc.verification import verify_program

HARDENING = settings.get_profile("hardening")
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROGRAMS = 2000 if LONG else 60

SHAPES = ("4x4", "16", "2x8", "8x4", "4x8", "3")  # f32 buffers; 4x8 @ 8x4 and 4x4 @ 4x4 are matmuls
MATMULS = {("4x8", "8x4"): "4x4", ("4x4", "4x4"): "4x4", ("8x4", "4x4"): "8x4", ("2x8", "8x4"): None}
UNARY = ("relu", "copy", "scale")
BINARY = ("add", "sub", "mul", "max")


def memref(shape: str, space: bool = True) -> str:
    return f"memref<{shape}xf32, #scratchpad.space>" if space else f"memref<{shape}xf32>"


@dataclass
class Scope:
    buffers: dict[str, str] = field(default_factory=dict)  # name -> shape, visible here
    written: set[str] = field(default_factory=set)  # buffers that hold data
    freed: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)  # allocated in this region


class ProgramGenerator:
    def __init__(self, rng: random.Random, max_ops: int = 28, max_depth: int = 2):
        self.rng = rng
        self.max_ops = max_ops
        self.max_depth = max_depth
        self.ops = 0
        self.counter = 0
        self.inputs: dict[str, str] = {}  # argument name -> shape
        self.outputs: list[tuple[str, str]] = []  # (argument name, shape)
        self.lines: list[str] = []

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * (depth + 2) + text)

    def usable(self, scope: Scope, shape: str | None = None, written: bool = True) -> list[str]:
        return [
            name for name, buffer_shape in scope.buffers.items()
            if name not in scope.freed and (shape is None or buffer_shape == shape) and (not written or name in scope.written)
        ]

    # --- statements ---------------------------------------------------------------------

    def alloc(self, scope: Scope, depth: int) -> None:
        name = self.fresh("b")
        shape = self.rng.choice(SHAPES)
        align = self.rng.choice(("", "", "", " align 64", " align 32", " align 8"))
        self.emit(depth, f"{name} = scratchpad.alloc(){align} : {memref(shape)}")
        scope.buffers[name] = shape
        scope.local.add(name)

    def dma_in(self, scope: Scope, depth: int) -> None:
        targets = self.usable(scope, written=False)
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        shape = scope.buffers[target]
        source = f"%in_{shape}"
        self.inputs[source] = shape
        self.emit(depth, f"scratchpad.dma {source} -> {target} : {memref(shape, False)} -> {memref(shape)}")
        scope.written.add(target)

    def fill(self, scope: Scope, depth: int) -> None:
        targets = self.usable(scope, written=False)
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        value = self.rng.choice(("0.5", "-1.25", "2.0", "0.0"))
        self.emit(depth, f'scratchpad.kernel "fill" outs({target} : {memref(scope.buffers[target])}) params {{value = {value} : f32}}')
        scope.written.add(target)

    def compute(self, scope: Scope, depth: int) -> None:
        sources = self.usable(scope)
        if not sources:
            return self.dma_in(scope, depth)
        kind = self.rng.randrange(3)
        if kind == 2:
            return self.matmul(scope, depth)
        first = self.rng.choice(sources)
        shape = scope.buffers[first]
        targets = [t for t in self.usable(scope, shape, written=False) if t != first]
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        if kind == 0:
            kernel = self.rng.choice(UNARY)
            params = " params {factor = 1.5 : f32}" if kernel == "scale" else ""
            self.emit(depth, f'scratchpad.kernel "{kernel}" ins({first} : {memref(shape)}) outs({target} : {memref(shape)}){params}')
        else:
            second = self.rng.choice([s for s in self.usable(scope, shape)])
            if second == target:
                return
            kernel = self.rng.choice(BINARY)
            self.emit(depth, f'scratchpad.kernel "{kernel}" ins({first}, {second} : {memref(shape)}, {memref(shape)}) '
                             f'outs({target} : {memref(shape)})')
        scope.written.add(target)

    def matmul(self, scope: Scope, depth: int) -> None:
        for (left_shape, right_shape), out_shape in self.rng.sample(list(MATMULS.items()), len(MATMULS)):
            if out_shape is None:
                continue
            lefts, rights = self.usable(scope, left_shape), self.usable(scope, right_shape)
            outs = [t for t in self.usable(scope, out_shape, written=False)]
            if not (lefts and rights):
                continue
            left, right = self.rng.choice(lefts), self.rng.choice(rights)
            outs = [t for t in outs if t not in (left, right)]
            if not outs:
                continue
            target = self.rng.choice(outs)
            self.emit(depth, f'scratchpad.kernel "matmul" ins({left}, {right} : {memref(left_shape)}, {memref(right_shape)}) '
                             f'outs({target} : {memref(out_shape)})')
            scope.written.add(target)
            return

    def dma_out(self, scope: Scope, depth: int) -> None:
        sources = self.usable(scope)
        if not sources:
            return
        source = self.rng.choice(sources)
        shape = scope.buffers[source]
        name = f"%out{len(self.outputs)}"
        self.outputs.append((name, shape))
        self.emit(depth, f"scratchpad.dma {source} -> {name} : {memref(shape)} -> {memref(shape, False)}")

    def dealloc(self, scope: Scope, depth: int) -> None:
        local = [name for name in scope.local if name not in scope.freed]
        if not local:
            return
        name = self.rng.choice(sorted(local))
        self.emit(depth, f"scratchpad.dealloc {name} : {memref(scope.buffers[name])}")
        scope.freed.add(name)

    def region(self, scope: Scope, depth: int, conditional: bool) -> Scope:
        inner = Scope(dict(scope.buffers), set(scope.written), set(scope.freed), set())
        self.block(inner, depth + 1, self.rng.randint(2, 6))
        if not conditional:
            scope.written |= {name for name in inner.written if name in scope.buffers}
        return inner

    def loop(self, scope: Scope, depth: int, counters: list[str]) -> None:
        trips = self.rng.randint(1, 3)
        counter = self.fresh("i")
        self.emit(depth, f"scf.for {counter} = %c0 to %c{trips} step %c1 {{")
        self.counters_stack.append(counter)
        self.region(scope, depth, conditional=False)
        self.counters_stack.pop()
        self.emit(depth, "}")

    def branch(self, scope: Scope, depth: int) -> None:
        if self.counters_stack:
            condition = self.fresh("p")
            self.emit(depth, f"{condition} = arith.cmpi ult, {self.counters_stack[-1]}, %c1 : index")
        else:
            condition = self.rng.choice(("%true", "%false"))
        self.emit(depth, f"scf.if {condition} {{")
        self.region(scope, depth, conditional=True)
        if self.rng.random() < 0.5:
            self.emit(depth, "} else {")
            self.region(scope, depth, conditional=True)
        self.emit(depth, "}")

    def block(self, scope: Scope, depth: int, count: int) -> None:
        for _ in range(count):
            if self.ops >= self.max_ops:
                return
            self.ops += 1
            choice = self.rng.random()
            if choice < 0.18:
                self.alloc(scope, depth)
            elif choice < 0.30:
                self.dma_in(scope, depth)
            elif choice < 0.36:
                self.fill(scope, depth)
            elif choice < 0.62:
                self.compute(scope, depth)
            elif choice < 0.70:
                self.dma_out(scope, depth)
            elif choice < 0.80:
                self.dealloc(scope, depth)
            elif depth >= self.max_depth:
                self.compute(scope, depth)
            elif choice < 0.90 and not (self.counters_stack and choice > 0.85):
                self.loop(scope, depth, [])
            else:
                self.branch(scope, depth)

    def program(self) -> str:
        self.counters_stack: list[str] = []
        scope = Scope()
        for _ in range(self.rng.randint(2, 4)):
            self.alloc(scope, 0)
        self.block(scope, 0, self.max_ops)
        if not self.outputs:
            if not self.usable(scope):
                self.dma_in(scope, 0)
            self.dma_out(scope, 0)
        arguments = [f"{name}: {memref(shape, False)}" for name, shape in sorted(self.inputs.items())]
        arguments += [f"{name}: {memref(shape, False)}" for name, shape in self.outputs]
        alignment = self.rng.choice((1, 4, 16, 64))
        header = [
            f'builtin.module attributes {{scratchpad.target = #scratchpad.target<"l1", capacity = 1048576, alignment = {alignment}>}} {{',
            f"  func.func @main({', '.join(arguments)}) {{",
            "    %c0 = arith.constant 0 : index",
            "    %c1 = arith.constant 1 : index",
            "    %c2 = arith.constant 2 : index",
            "    %c3 = arith.constant 3 : index",
            "    %true = arith.constant true",
            "    %false = arith.constant false",
        ]
        return "\n".join(header + self.lines + ["    func.return", "  }", "}", ""])


def generate(seed: int) -> str:
    rng = random.Random(seed)
    return ProgramGenerator(rng, max_ops=rng.randint(6, 30), max_depth=rng.choice((0, 1, 2, 2))).program()


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
