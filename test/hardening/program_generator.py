"""The generator of random programs the hardening tests plan and verify by execution
(`test_random_programs.py`, `test_spill_programs.py`, `cpu_reference.py`) and the
benchmarks measure (`bench/hoisted`). It imports nothing of pytest or hypothesis.

It writes programs as text: straight-line code and nests of `scf.for` (trip counts 1-3)
and `scf.if` (on the loop counter or a constant), buffers of several shapes and alignments
allocated at any depth, data moved in, computed by kernels (elementwise, unary, fill,
matmul, and with `concat` concatenations), moved out, freed by an explicit dealloc or by
their last use; in the scratchpad
dialect or as plain upstream memref IR, with allocations where they are used or hoisted to
the function's entry (see `ProgramGenerator`). The generator tracks which buffers hold
data, so a program only reads what it wrote (the reference run would reject it otherwise).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SHAPES = ("4x4", "16", "2x8", "8x4", "4x8", "3")  # f32 buffers; 4x8 @ 8x4 and 4x4 @ 4x4 are matmuls
MATMULS = {("4x8", "8x4"): "4x4", ("4x4", "4x4"): "4x4", ("8x4", "4x4"): "8x4", ("2x8", "8x4"): None}
UNARY = ("relu", "copy", "scale")
BINARY = ("add", "sub", "mul", "max")
CONCATS = ((("4x4", "4x4"), "8x4", 0), (("2x8", "2x8"), "4x8", 0), (("4x4", "4x4"), "4x8", 1))
"""(part shapes, result shape, axis): along the outermost axis each part's slice is one range
of bytes (in place with `inplace=concat`); along axis 1 of 4x4 parts it is strided (copied)."""


def memref(shape: str, space: bool = True) -> str:
    return f"memref<{shape}xf32, #scratchpad.space>" if space else f"memref<{shape}xf32>"


@dataclass
class Scope:
    buffers: dict[str, str] = field(default_factory=dict)  # name -> shape, visible here
    written: set[str] = field(default_factory=set)  # buffers that hold data
    freed: set[str] = field(default_factory=set)
    local: set[str] = field(default_factory=set)  # allocated in this region


BINARY_ARITH = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "max": "arith.maximumf"}


class ProgramGenerator:
    """Random programs (see the module doc).

    `upstream`: plain upstream memref IR instead of the scratchpad dialect, as MLIR's
    bufferization leaves it: `memref.alloc` without a memory space, `memref.copy` in and
    out of the arguments, and each kernel as a loop nest of `memref.load`, `arith` and
    `memref.store` (matmul with an `iter_args` reduction), no target.

    `hoist`: the fraction of allocations moved to the function's entry, as upstream's
    buffer hoisting and IREE leave them (1: all), so first writes happen inside loops and
    branches. A hoisted buffer is freed at the top level only; a loop may read, from its
    second iteration on (`scf.if` on the counter), a buffer its body writes that lives
    across iterations; some buffers get a read that never runs (`scf.if %false`) before
    their first write, a read before any write for the liveness analysis. Upstream
    programs with hoisting also get row loops: `scf.for` over the rows of a 2-D buffer,
    each iteration running random statements (buffers allocated in the body among them)
    and then writing its row, so that the rows written by earlier iterations must survive
    the later ones (a lifetime that started at the write inside the loop, not at the
    loop's entry, would let a body buffer overwrite them).
    """

    def __init__(self, rng: random.Random, max_ops: int = 28, max_depth: int = 2, *,
                 hoist: float = 0.0, upstream: bool = False, concat: float = 0.0):
        self.rng = rng
        self.concat_share = concat  # the share of statements that concatenate (0: the stream of before)
        self.max_ops = max_ops
        self.max_depth = max_depth
        self.hoist = float(hoist)
        self.hoisted: set[str] = set()
        self.upstream = upstream
        self.ops = 0
        self.counter = 0
        self.inputs: dict[str, str] = {}  # argument name -> shape
        self.outputs: list[tuple[str, str]] = []  # (argument name, shape)
        self.lines: list[str] = []
        self.prologue: list[str] = []  # hoisted allocations

    def type(self, shape: str, scratchpad: bool = True) -> str:
        return memref(shape, scratchpad and not self.upstream)

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
        if self.upstream:
            attribute = f" {{alignment = {align.split()[-1]} : i64}}" if align else ""
            line = f"{name} = memref.alloc(){attribute} : {self.type(shape)}"
        else:
            line = f"{name} = scratchpad.alloc(){align} : {memref(shape)}"
        if self.hoist and (self.hoist >= 1 or self.rng.random() < self.hoist):
            self.prologue.append("    " + line)
            self.hoisted.add(name)
        else:
            self.emit(depth, line)
        scope.buffers[name] = shape
        scope.local.add(name)
        if name in self.hoisted and self.rng.random() < 0.15:
            self.emit(depth, "scf.if %false {")  # a read before any write, that never runs
            self.copy_out(name, shape, depth + 1)
            self.emit(depth, "}")

    def dma_in(self, scope: Scope, depth: int) -> None:
        targets = self.usable(scope, written=False)
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        shape = scope.buffers[target]
        source = f"%in_{shape}"
        self.inputs[source] = shape
        self.copy(source, target, shape, depth)
        scope.written.add(target)

    def copy(self, source: str, target: str, shape: str, depth: int) -> None:
        """Main memory to a buffer or back: `scratchpad.dma`, or `memref.copy` upstream."""
        if self.upstream:
            plain = self.type(shape)
            self.emit(depth, f'"memref.copy"({source}, {target}) : ({plain}, {plain}) -> ()')
            return
        source_type = memref(shape, not source.startswith(("%in_", "%out")))
        target_type = memref(shape, not target.startswith(("%in_", "%out")))
        self.emit(depth, f"scratchpad.dma {source} -> {target} : {source_type} -> {target_type}")

    def copy_out(self, source: str, shape: str, depth: int) -> None:
        """Copies a buffer into a fresh output argument."""
        name = f"%out{len(self.outputs)}"
        self.outputs.append((name, shape))
        self.copy(source, name, shape, depth)

    def nest(self, depth: int, shape: str, body) -> None:
        """A loop nest over `shape` (upstream kernels); `body(depth, indices)` emits its body."""
        indices = []
        for level, dimension in enumerate(shape.split("x")):
            index = self.fresh("j")
            self.emit(depth + level, f"scf.for {index} = %c0 to %c{dimension} step %c1 {{")
            indices.append(index)
        body(depth + len(indices), ", ".join(indices))
        for level in reversed(range(len(indices))):
            self.emit(depth + level, "}")

    def constant(self, depth: int, value: str) -> str:
        name = self.fresh("k")
        self.emit(depth, f"{name} = arith.constant {value} : f32")
        return name

    def upstream_kernel(self, depth: int, kernel: str, ins: list[str], target: str, shape: str,
                        value: str | None = None) -> None:
        """An elementwise kernel (fill, unary or binary) as a loop nest of loads and stores."""
        plain = self.type(shape)

        def body(inner: int, indices: str) -> None:
            loaded = []
            for source in ins:
                loaded.append(self.fresh("x"))
                self.emit(inner, f"{loaded[-1]} = memref.load {source}[{indices}] : {plain}")
            if kernel == "fill":
                result = self.constant(inner, value)
            elif kernel == "copy":
                result = loaded[0]
            else:
                result = self.fresh("r")
                if kernel == "relu":
                    self.emit(inner, f"{result} = arith.maximumf {loaded[0]}, {self.constant(inner, '0.0')} : f32")
                elif kernel == "scale":
                    self.emit(inner, f"{result} = arith.mulf {loaded[0]}, {self.constant(inner, '1.5')} : f32")
                else:
                    self.emit(inner, f"{result} = {BINARY_ARITH[kernel]} {loaded[0]}, {loaded[1]} : f32")
            self.emit(inner, f"memref.store {result}, {target}[{indices}] : {plain}")

        self.nest(depth, shape, body)

    def upstream_matmul(self, depth: int, left: str, right: str, target: str, shapes: tuple[str, str, str]) -> None:
        left_shape, right_shape, out_shape = shapes
        inner_dimension = left_shape.split("x")[1]

        def body(inner: int, indices: str) -> None:
            row, column = indices.split(", ")
            zero = self.constant(inner, "0.0")
            total, k, acc = self.fresh("s"), self.fresh("k"), self.fresh("acc")
            self.emit(inner, f"{total} = scf.for {k} = %c0 to %c{inner_dimension} step %c1 iter_args({acc} = {zero}) -> (f32) {{")
            x, y, product, following = self.fresh("x"), self.fresh("y"), self.fresh("p"), self.fresh("n")
            self.emit(inner + 1, f"{x} = memref.load {left}[{row}, {k}] : {self.type(left_shape)}")
            self.emit(inner + 1, f"{y} = memref.load {right}[{k}, {column}] : {self.type(right_shape)}")
            self.emit(inner + 1, f"{product} = arith.mulf {x}, {y} : f32")
            self.emit(inner + 1, f"{following} = arith.addf {acc}, {product} : f32")
            self.emit(inner + 1, f"scf.yield {following} : f32")
            self.emit(inner, "}")
            self.emit(inner, f"memref.store {total}, {target}[{indices}] : {self.type(out_shape)}")

        self.nest(depth, out_shape, body)

    def fill(self, scope: Scope, depth: int) -> None:
        targets = self.usable(scope, written=False)
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        value = self.rng.choice(("0.5", "-1.25", "2.0", "0.0"))
        if self.upstream:
            self.upstream_kernel(depth, "fill", [], target, scope.buffers[target], value)
        else:
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
            if self.upstream:
                self.upstream_kernel(depth, kernel, [first], target, shape)
            else:
                self.emit(depth, f'scratchpad.kernel "{kernel}" ins({first} : {memref(shape)}) outs({target} : {memref(shape)}){params}')
        else:
            second = self.rng.choice([s for s in self.usable(scope, shape)])
            if second == target:
                return
            kernel = self.rng.choice(BINARY)
            if self.upstream:
                self.upstream_kernel(depth, kernel, [first, second], target, shape)
            else:
                self.emit(depth, f'scratchpad.kernel "{kernel}" ins({first}, {second} : {memref(shape)}, {memref(shape)}) '
                                 f'outs({target} : {memref(shape)})')
        scope.written.add(target)

    def concat(self, scope: Scope, depth: int) -> None:
        """A `concat` kernel (`CONCATS`) into a new buffer, of a written buffer of each part's
        shape or, half the time or when there is none, a new one moved in from main memory."""
        (first_shape, second_shape), out_shape, axis = self.rng.choice(CONCATS)
        parts = []
        for shape in (first_shape, second_shape):
            found = [name for name in self.usable(scope, shape) if name not in parts]
            if found and self.rng.random() < 0.5:
                parts.append(self.rng.choice(found))
                continue
            part = self.fresh("b")
            self.emit(depth, f"{part} = scratchpad.alloc() : {memref(shape)}")
            scope.buffers[part] = shape
            scope.local.add(part)
            self.inputs[f"%in_{shape}"] = shape
            self.copy(f"%in_{shape}", part, shape, depth)
            scope.written.add(part)
            parts.append(part)
        target = self.fresh("b")
        self.emit(depth, f"{target} = scratchpad.alloc() : {memref(out_shape)}")
        scope.buffers[target] = out_shape
        scope.local.add(target)
        self.emit(depth, f'scratchpad.kernel "concat" ins({parts[0]}, {parts[1]} : {memref(first_shape)}, '
                         f'{memref(second_shape)}) outs({target} : {memref(out_shape)}) params {{axis = {axis} : i64}}')
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
            if self.upstream:
                self.upstream_matmul(depth, left, right, target, (left_shape, right_shape, out_shape))
            else:
                self.emit(depth, f'scratchpad.kernel "matmul" ins({left}, {right} : {memref(left_shape)}, {memref(right_shape)}) '
                                 f'outs({target} : {memref(out_shape)})')
            scope.written.add(target)
            return

    def dma_out(self, scope: Scope, depth: int) -> None:
        sources = self.usable(scope)
        if not sources:
            return
        source = self.rng.choice(sources)
        self.copy_out(source, scope.buffers[source], depth)

    def dealloc(self, scope: Scope, depth: int) -> None:
        local = [name for name in scope.local if name not in scope.freed and (depth == 0 or name not in self.hoisted)]
        if not local:  # a hoisted buffer is freed at the top level only
            return
        name = self.rng.choice(sorted(local))
        operation = "memref.dealloc" if self.upstream else "scratchpad.dealloc"
        self.emit(depth, f"{operation} {name} : {self.type(scope.buffers[name])}")
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
        body_at = len(self.lines)
        self.counters_stack.append(counter)
        inner = self.region(scope, depth, conditional=False)
        self.counters_stack.pop()
        if self.hoist:
            carried = sorted(name for name in inner.written if name not in inner.freed
                             and (name in self.hoisted or name not in inner.local))
            if carried and self.rng.random() < 0.6:
                self.carried_read(self.rng.choice(carried), inner, counter, depth + 1, body_at)
        self.emit(depth, "}")

    def row_loop(self, scope: Scope, depth: int) -> None:
        """Upstream, hoisting: a loop over the rows of a 2-D buffer that writes one row per
        iteration after a random body (see the class doc)."""
        targets = [name for name in self.usable(scope, written=False) if "x" in scope.buffers[name]]
        if not targets:
            return self.alloc(scope, depth)
        target = self.rng.choice(targets)
        shape = scope.buffers[target]
        rows, columns = shape.split("x")
        source = f"%in_{shape}"
        self.inputs[source] = shape
        row = self.fresh("i")
        self.emit(depth, f"scf.for {row} = %c0 to %c{rows} step %c1 {{")
        self.counters_stack.append(row)
        self.region(scope, depth, conditional=False)
        self.counters_stack.pop()
        # the row through two temporaries of the body: the first is dead before the row is
        # written, so it may take bytes of the target's earlier rows unless the target's
        # lifetime starts at the loop's entry
        row_type = self.type(columns)
        first, second = self.fresh("t"), self.fresh("t")
        self.emit(depth + 1, f"{first} = memref.alloc() : {row_type}")
        self.row_nest(depth + 1, columns, f"{source}[{row}, %col]", f"{first}[%col]", shape, columns, double=False)
        self.emit(depth + 1, f"{second} = memref.alloc() : {row_type}")
        self.row_nest(depth + 1, columns, f"{first}[%col]", f"{second}[%col]", columns, columns, double=True)
        self.emit(depth + 1, f"memref.dealloc {first} : {row_type}")
        self.row_nest(depth + 1, columns, f"{second}[%col]", f"{target}[{row}, %col]", columns, shape, double=False)
        self.emit(depth + 1, f"memref.dealloc {second} : {row_type}")
        self.emit(depth, "}")
        scope.written.add(target)
        self.copy_out(target, shape, depth)  # every row is read: one overwritten shows

    def row_nest(self, depth: int, columns: str, load: str, store: str, load_shape: str, store_shape: str,
                 double: bool) -> None:
        """`store = load` (doubled) over the columns; `%col` in the subscripts is the column."""
        column, value, doubled = self.fresh("j"), self.fresh("x"), self.fresh("r")
        self.emit(depth, f"scf.for {column} = %c0 to %c{columns} step %c1 {{")
        self.emit(depth + 1, f"{value} = memref.load {load.replace('%col', column)} : {self.type(load_shape)}")
        result = value
        if double:
            result = doubled
            self.emit(depth + 1, f"{doubled} = arith.addf {value}, {value} : f32")
        self.emit(depth + 1, f"memref.store {result}, {store.replace('%col', column)} : {self.type(store_shape)}")
        self.emit(depth, "}")

    def carried_read(self, name: str, inner: Scope, counter: str, depth: int, body_at: int) -> None:
        """At the top of a loop body: from the second iteration on, copy out what the
        previous iteration wrote into `name` (valid only for a hoisted buffer)."""
        start = len(self.lines)
        later = self.fresh("p")
        self.emit(depth, f"{later} = arith.cmpi ugt, {counter}, %c0 : index")
        self.emit(depth, f"scf.if {later} {{")
        self.copy_out(name, inner.buffers[name], depth + 1)
        self.emit(depth, "}")
        added = self.lines[start:]
        del self.lines[start:]
        self.lines[body_at:body_at] = added

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
            if self.concat_share and not self.upstream and self.rng.random() < self.concat_share:
                self.concat(scope, depth)
                continue
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
            elif self.upstream and self.hoist and choice < 0.84:
                self.row_loop(scope, depth)
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
        if self.upstream:  # no target: every memref.alloc is planned (minimize, or for a capacity)
            module = "builtin.module {"
            constants = [f"    %c{n} = arith.constant {n} : index" for n in (0, 1, 2, 3, 4, 8, 16)]
        else:
            alignment = self.rng.choice((1, 4, 16, 64))
            module = (f'builtin.module attributes {{scratchpad.target = #scratchpad.target<"l1", '
                      f'capacity = 1048576, alignment = {alignment}>}} {{')
            constants = [f"    %c{n} = arith.constant {n} : index" for n in (0, 1, 2, 3)]
        header = [
            module,
            f"  func.func @main({', '.join(arguments)}) {{",
            *constants,
            "    %true = arith.constant true",
            "    %false = arith.constant false",
        ]
        return "\n".join(header + self.prologue + self.lines + ["    func.return", "  }", "}", ""])


def generate(seed: int, *, hoist: float = 0.0, upstream: bool = False, max_ops: int | None = None,
             concat: float = 0.0) -> str:
    """A program of the seeded generator (`max_ops` statements, else 6 to 30; see `ProgramGenerator`);
    `concat`: the share of statements that concatenate (scratchpad dialect only)."""
    rng = random.Random(seed)
    ops = rng.randint(6, 30) if max_ops is None else max_ops
    generator = ProgramGenerator(rng, max_ops=ops, max_depth=rng.choice((0, 1, 2, 2)), hoist=hoist, upstream=upstream,
                                 concat=concat)
    return generator.program()
