"""Differential verification of a plan: it plans, lowers and runs twice, so it sits above
both the passes and the interpreter (neither imports it).

Verification (`verify_program`): plan and lower a copy of the program with the
telamalloc passes, run the original (private storage per buffer) and the lowered program
(one arena) on the same inputs, collect shadow violations of the lowered run, and compare
every output bit for bit: the results and the arguments the function writes
(`telamalloc.passes.analysis.written`; inputs it never writes are not outputs). The report gives each
planned function's arena on its own (the entry's, then its callees'), never their sum.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, DictionaryAttr, IntegerAttr, MemRefType, ModuleOp
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from telamalloc.dialects import scratchpad, scratchpad_types
from telamalloc.dialects.dims import DimsError, argument_sizes
from telamalloc.errors import ErrorKind
from telamalloc.passes import TelaPipelinePass
from telamalloc.passes.analysis.collect import PEAK_ATTR, SCHEDULE_ATTR
from telamalloc.passes.analysis.written import signature, written_arguments
from telamalloc.passes.diagnostics import PassFailedAtOp
from telamalloc.passes.options import PlanOptions
from telamalloc.runtime.interp.machine import (
    ARENA_MARK,
    DEFAULT_SEED,
    InterpreterError,
    Violation,
    numpy_dtype,
)
from telamalloc.runtime.interp.run import (
    Output,
    RunResult,
    argument_name,
    capacity_in_force,
    find_entry,
    random_inputs,
    run_program,
)
from telamalloc.wording import counted

# --------------------------------------------------------------------------------------
# Differential verification


@dataclass(frozen=True)
class Mismatch:
    """An output that differs before and after planning."""

    name: str
    differing: int  # elements whose bits differ
    first_index: tuple[int, ...]
    before: str
    after: str

    def __str__(self) -> str:
        index = ", ".join(str(i) for i in self.first_index)
        return (
            f"output '{self.name}' differs after planning in {self.differing} elements, "
            f"first at [{index}]: '{self.before}' before, '{self.after}' after"
        )


@dataclass(frozen=True)
class FunctionArena:
    """The arena one function of the lowered program reserves (its own, not its callees')."""

    name: str  # the function, without '@'; 'f.l2' for memory 'l2' of a function with several memories
    bytes: int  # its arenas' bytes (0: nothing planned)
    capacity: int | None  # the capacity in force for it (None: minimize, no limit)
    dynamic: bool = False  # its arena's size is computed at run time (a parametric plan): `bytes` as run


@dataclass(frozen=True)
class VerifyReport:
    entry: str
    outputs: tuple[str, ...]  # the outputs compared: results, then the arguments the function writes
    mismatches: tuple[Mismatch, ...]
    violations: tuple[Violation, ...]  # shadow violations of the planned run
    arena_bytes: int  # the entry function's own arena, in bytes
    capacity: int | None  # the capacity planned for (None: minimize)
    buffers: int  # buffers seen by the planned run
    arenas: tuple[FunctionArena, ...] = ()  # the entry, then each callee it reaches that has an arena
    values: tuple[Output, ...] = field(default=(), repr=False, compare=False)  # the planned run's outputs
    notes: tuple[str, ...] = ()  # what planning did besides offsets (spilling), one line each

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.violations

    def lines(self) -> list[str]:
        """A deterministic human-readable report, one fact per line."""
        arenas = self.arenas or (FunctionArena(self.entry, self.arena_bytes, self.capacity),)
        lines = [
            f"verify: '@{arena.name}' placed no arena at these sizes (above capacity {arena.capacity}: "
            "its spilled copy ran)"
            if arena.dynamic and arena.bytes == 0 and len(arenas) > 1 and arena.capacity is not None else
            f"verify: '@{arena.name}' planned into {arena.bytes} bytes"
            f"{' at these sizes (parametric, ' if arena.dynamic else ' ('}"
            f"{'minimize' if arena.capacity is None else f'capacity {arena.capacity}'})"
            for arena in arenas
        ]
        lines += [f"verify: {note}" for note in self.notes]
        lines += [f"{violation.location}: error: {violation.message}" for violation in self.violations]
        lines += [f"verify: error: {mismatch}" for mismatch in self.mismatches]
        verdict = "ok" if self.ok else "FAILED"
        lines.append(
            f"verify: {verdict}: {len(self.outputs) - len(self.mismatches)} of "
            f"{len(self.outputs)} outputs bit-identical, {len(self.violations)} shadow violations"
        )
        return lines


def compare_outputs(reference: RunResult, planned: RunResult) -> tuple[Mismatch, ...]:
    """Bit-for-bit comparison of two runs' outputs (same order and names)."""
    mismatches: list[Mismatch] = []
    for before, after in zip(reference.outputs, planned.outputs, strict=True):
        if before.value.shape != after.value.shape or before.value.dtype != after.value.dtype:
            mismatches.append(
                Mismatch(before.name, before.value.size, (), f"{before.value.dtype}{before.value.shape}",
                         f"{after.value.dtype}{after.value.shape}")
            )
            continue
        if before.value.tobytes() == after.value.tobytes():
            continue
        width = before.value.dtype.itemsize
        before_bits = before.value.reshape(-1).view(np.uint8).reshape(-1, width)
        after_bits = after.value.reshape(-1).view(np.uint8).reshape(-1, width)
        differing = np.flatnonzero((before_bits != after_bits).any(axis=1))
        first = np.unravel_index(int(differing[0]), before.value.shape) if before.value.shape else ()
        index = tuple(int(i) for i in first)
        mismatches.append(
            Mismatch(before.name, int(differing.size), index, repr(before.value[index].item()),
                     repr(after.value[index].item()))
        )
    return tuple(mismatches)


def verify_lowered(
    original: ModuleOp,
    lowered: ModuleOp,
    *,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = DEFAULT_SEED,
    capacity: int | None = None,
    shadow: bool = True,
    dims: Mapping[str, int] | None = None,
) -> VerifyReport:
    """Runs `original` (a private storage per buffer) and `lowered` on the same inputs
    (default: random ones, with the symbolic dimensions at `dims`, `dialects/dims.py`).

    Shadow violations of the lowered run are collected (with `shadow=True`); outputs are
    compared bit for bit. Errors of the original run (the program itself is wrong) raise
    `InterpreterError`.
    """
    function = find_entry(original, entry)
    if inputs is None:
        inputs = random_inputs(function, seed, dims)
    lowered_entry = find_entry(lowered, entry)
    given_capacity = capacity
    capacity = capacity_in_force(lowered_entry, capacity)
    reference = run_program(
        original, entry=entry, inputs=inputs, capacity=capacity, honor_offsets=False
    )
    planned = run_program(
        lowered, entry=entry, inputs=inputs, capacity=capacity, shadow=shadow, collect_violations=True
    )
    reference, planned = _written_only(function, reference, planned)
    arenas = function_arenas(lowered, lowered_entry, given_capacity)
    if arenas[0].dynamic and len(arenas) == 1:  # the run's arena is the one sized at run time
        arenas = (dataclasses.replace(arenas[0], bytes=planned.arena_bytes),)
    else:  # each parametric function: what it placed itself (its largest run; 0: its spilled copy ran)
        placed = dict(planned.function_arenas)
        arenas = tuple(dataclasses.replace(arena, bytes=placed.get(arena.name, 0)) if arena.dynamic else arena
                       for arena in arenas)
    return VerifyReport(
        entry=reference.entry,
        outputs=tuple(output.name for output in reference.outputs),
        mismatches=compare_outputs(reference, planned),
        violations=planned.violations,
        arena_bytes=arenas[0].bytes,
        capacity=capacity,
        buffers=len(planned.buffers),
        arenas=arenas,
        values=planned.outputs,
    )


def _written_only(function: func.FuncOp, reference: RunResult, planned: RunResult) -> tuple[RunResult, RunResult]:
    """Both runs' outputs cut to what the function writes: its results, the arguments the
    static analysis finds written, and any argument either run wrote."""
    written = {argument_name(function, index) for index in written_arguments(function)}
    results = len(function.function_type.outputs.data)
    keep = [
        index < results or before.name in written or before.written or after.written
        for index, (before, after) in enumerate(zip(reference.outputs, planned.outputs, strict=True))
    ]

    def cut(run: RunResult) -> RunResult:
        outputs = tuple(output for output, kept in zip(run.outputs, keep) if kept)
        return RunResult(run.entry, outputs, run.violations, run.arena_bytes, run.buffers, run.function_arenas)

    return cut(reference), cut(planned)


def function_arenas(module: ModuleOp, entry: func.FuncOp, capacity: int | None = None) -> tuple[FunctionArena, ...]:
    """Each function's own arena in a lowered `module`: `entry` first, then the functions it
    calls (transitively, in the order first called) that reserve an arena.

    A function's arena is the sum of its `scratchpad.arena` ops and `tela-lower`'s marked
    `memref.alloc` arenas, else its `scratchpad.peak` (planned but not lowered), else 0.
    `capacity` overrides each function's target capacity, as for planning."""
    order: list[func.FuncOp] = [entry]
    index = 0
    while index < len(order):
        for op in order[index].walk():
            if isinstance(op, func.CallOp):
                callee = SymbolTable.lookup_symbol(module, op.callee)
                if isinstance(callee, func.FuncOp) and callee not in order and callee.body.blocks:
                    order.append(callee)
        index += 1
    arenas = []
    for function in order:
        memories = _arena_bytes_per_memory(function)
        if len(memories) > 1:  # several memories (`scratchpad.targets`): each arena on its own line
            targets = {target.target_name.data: target.capacity.data for target in scratchpad_types.find_targets(function)}
            for memory, size in memories.items():
                arenas.append(FunctionArena(f"{function.sym_name.data}.{memory}", size, targets.get(memory)))
            continue
        size = _own_arena_bytes(function)
        dynamic = _has_dynamic_arena(function)
        if function is entry or size or dynamic:
            arenas.append(FunctionArena(function.sym_name.data, size, capacity_in_force(function, capacity), dynamic))
    return tuple(arenas)


def _arena_bytes_per_memory(function: func.FuncOp) -> dict[str, int]:
    """The bytes of `tela-lower`'s marked arenas by memory name (the unnamed
    `#scratchpad.space` is the first target's), in the order the arenas appear."""
    targets = scratchpad_types.find_targets(function)
    if len(targets) < 2:
        return {}
    first = targets[0].target_name.data
    memories: dict[str, int] = {}
    for op in function.walk():
        if not (isinstance(op, memref.AllocOp | memref.AllocaOp) and ARENA_MARK in op.attributes):
            continue
        type_ = op.memref.type
        if not (isinstance(type_, MemRefType) and type_.get_shape()):
            continue
        space = type_.memory_space
        name = space.space_name.data if isinstance(space, scratchpad_types.ScratchpadSpaceAttr) and space.space_name.data else first
        memories[name] = memories.get(name, 0) + max(type_.get_shape()[0], 0)
    return memories


def _has_dynamic_arena(function: func.FuncOp) -> bool:
    return any(
        isinstance(op, memref.AllocOp) and ARENA_MARK in op.attributes and op.dynamic_sizes for op in function.walk()
    )


def _own_arena_bytes(function: func.FuncOp) -> int:
    total, found = 0, False
    for op in function.walk():
        if isinstance(op, scratchpad.ArenaOp):
            total, found = total + op.byte_size, True
        elif isinstance(op, memref.AllocOp | memref.AllocaOp) and ARENA_MARK in op.attributes:
            type_ = op.memref.type
            if isinstance(type_, MemRefType) and type_.get_shape():
                total, found = total + max(type_.get_shape()[0], 0), True
    if found:
        return total
    peak = function.attributes.get(PEAK_ATTR)
    return peak.value.data if isinstance(peak, IntegerAttr) else 0


PlanFunction = Callable[[ModuleOp, int | None], object]


def plan_and_lower(
    module: ModuleOp,
    capacity: int | None,
    on_overflow: str | None = None,
    lifetimes: str = PlanOptions.lifetimes,
    schedule: str = "none",
    inplace: str = PlanOptions.inplace,
) -> tuple[str, ...]:
    """Plans and lowers `module` in place with the telamalloc pipeline (`tela-pipeline`).

    `capacity`, when given, overrides every `#scratchpad.target`'s capacity; a module
    without targets and without `capacity` is planned in minimize mode; `on_overflow`
    is the pipeline's option ('spill' keeps values in main memory when they do not fit), and
    so are `lifetimes` (where lifetimes start: 'first-write' or 'alloc') and `schedule`
    ('none', or the `tela-schedule` method that reorders the ops first), and `inplace`
    (which ops write over a dying input); their defaults are `PlanOptions`'.
    Returns one line per spilled or scheduled function. Planning failures raise `InterpreterError`.
    """
    has_target = any(
        scratchpad_types.find_target(op) is not None for op in module.walk() if isinstance(op, func.FuncOp)
    )
    mode = "minimize" if capacity is None and not has_target else "fit"
    try:
        plans = TelaPipelinePass(
            capacity=capacity, mode=mode, on_overflow=on_overflow, lifetimes=lifetimes, schedule=schedule,
            inplace=inplace,
        ).run(module)
    except DiagnosticException as error:
        op = error.op if isinstance(error, PassFailedAtOp) else None
        kind = error.kind if isinstance(error, PassFailedAtOp) else ErrorKind.BAD_INPUT
        raise InterpreterError(f"planning failed: {' '.join(str(error).split())}", op, kind) from None
    scheduled = tuple(_schedule_note(op) for op in module.walk() if isinstance(op, func.FuncOp)
                      and schedule != "none" and SCHEDULE_ATTR in op.attributes)
    return scheduled + tuple(
        plan.spill.line(plan.name).removeprefix("tela-plan: ") for plan in plans if plan.spill is not None
    )


def _schedule_note(function: func.FuncOp) -> str:
    """`scheduled '@f': LOAD 8192 -> 6144 bytes (25.0% less)` from the function's attribute."""
    record = function.attributes[SCHEDULE_ATTR]
    assert isinstance(record, DictionaryAttr)
    before, after = (record.data[key] for key in ("load_before", "load_after"))
    assert isinstance(before, IntegerAttr) and isinstance(after, IntegerAttr)
    saved = 0.0 if before.value.data == 0 else 1 - after.value.data / before.value.data
    return (f"scheduled '@{function.sym_name.data}': LOAD {before.value.data} -> {after.value.data} bytes "
            f"({saved:.1%} less)")


def verify_program(
    module: ModuleOp,
    capacity: int | None = None,
    *,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] | None = None,
    seed: int = DEFAULT_SEED,
    shadow: bool = True,
    plan: PlanFunction | None = None,
    on_overflow: str | None = None,
    lifetimes: str = PlanOptions.lifetimes,
    schedule: str = "none",
    dims: Mapping[str, int] | None = None,
    inplace: str = PlanOptions.inplace,
) -> VerifyReport:
    """Plans and lowers a copy of `module`, then checks it with `verify_lowered` (random
    inputs with the symbolic dimensions at `dims`).

    `module` itself is not changed. `plan` (default: the telamalloc pipeline with
    `on_overflow`, `lifetimes`, `schedule` and `inplace`) mutates the copy in place; tests pass their own to
    inject faults.
    """
    lowered = module.clone()
    if plan is None:
        notes = plan_and_lower(lowered, capacity, on_overflow, lifetimes, schedule, inplace)
    else:
        notes = plan(lowered, capacity)
    report = verify_lowered(
        module, lowered, entry=entry, inputs=inputs, seed=seed, capacity=capacity, shadow=shadow, dims=dims
    )
    if isinstance(notes, tuple) and notes and all(isinstance(note, str) for note in notes):
        report = dataclasses.replace(report, notes=tuple(str(note) for note in notes))
    return report


def _names(function: func.FuncOp, indices: Sequence[int]) -> str:
    return ", ".join(argument_name(function, index) for index in indices)


def _given(count: int) -> str:
    return f"{count} {'is' if count == 1 else 'are'} given"


def _output_shape(function: func.FuncOp, index: int, type_: MemRefType, outputs, given: Sequence[np.ndarray]
                  ) -> tuple[int, ...]:
    """Output `index`'s shape, its dynamic dimensions taken from the inputs' dimensions of
    the same symbol (`dialects/dims.py`); a `?` no input names stays DYNAMIC_INDEX."""
    shape = tuple(type_.get_shape())
    if DYNAMIC_INDEX not in shape:
        return shape
    try:
        sizes = argument_sizes(function)
    except DimsError:
        return shape
    inputs = [position for position in range(len(function.function_type.inputs.data)) if position not in outputs]
    value_of = dict(zip(inputs, given))
    known: dict[str, int] = {}
    for name, source in sizes:
        array = value_of.get(source.argument)
        if array is not None and name not in known:
            known[name] = int(array.shape[source.axis]) if source.axis is not None else int(np.asarray(array).reshape(-1)[0])
    named = {source.axis: name for name, source in sizes if source.argument == index}
    return tuple(known.get(named.get(axis, ""), size) if size == DYNAMIC_INDEX else size for axis, size in enumerate(shape))


def complete_inputs(function: func.FuncOp, given: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every argument's value from `given`: the inputs alone, in argument order (each
    output then starts zero-filled), or every argument, outputs included.

    Raises `InterpreterError` (located at the function) for any other count, or for an
    output of dynamic shape when only the inputs are given (its size is not known).
    """
    split = signature(function)
    types = function.function_type.inputs.data
    if len(given) == len(types):
        return list(given)
    name = f"'@{function.sym_name.data}'"
    if len(given) != len(split.inputs) or not split.outputs:
        inputs = f"{counted(len(split.inputs), 'input')} ({_names(function, split.inputs) or 'none'})"
        if not split.outputs:
            raise InterpreterError(
                f"{name} takes {inputs} but {_given(len(given))}; pass one .npy file per input, in argument order",
                function,
            )
        outputs = f"{counted(len(split.outputs), 'output')} ({_names(function, split.outputs)})"
        raise InterpreterError(
            f"{name} takes {inputs} and writes {outputs}, but {_given(len(given))}; pass the "
            f"{counted(len(split.inputs), 'input')} in argument order (the outputs start zero-filled), "
            f"or all {len(types)} arguments",
            function,
        )
    values: list[np.ndarray] = []
    pending = iter(given)
    for index, type_ in enumerate(types):
        if index not in split.outputs:
            values.append(next(pending))
            continue
        assert isinstance(type_, MemRefType)
        shape = _output_shape(function, index, type_, split.outputs, given)
        if DYNAMIC_INDEX in shape:
            raise InterpreterError(
                f"output {argument_name(function, index)} '{type_}' of {name} has a dynamic shape, so it "
                f"cannot be zero-filled; pass all {len(types)} arguments, outputs included",
                function,
            )
        values.append(np.zeros(shape, dtype=numpy_dtype(type_.element_type)))
    return values
