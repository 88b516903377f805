"""Random programs for the scheduling campaign (`test_schedule_campaign.py`): the shapes
whose memory dependences are easy to get wrong, in plain upstream memref IR.

Each program has two mutable globals, helper functions that read a global into their
argument (`@get<k>`), write their argument into a global (`@set<k>`) or update their
argument in place (`@bump`), and a function `@f` with three memref arguments that
`@main` calls with arguments drawn from its own outputs and the globals themselves, with
repetition: so `@f`'s arguments alias each other and the globals it names. `@f`'s body is
a random sequence of temporaries written by copies, elementwise loops and the helpers,
mixed into the arguments and the globals; calls are barriers and often adjacent. `@main`
copies the globals into its last outputs, so every write to a global is observed.

The generator tracks which temporaries hold data, so a program only reads what it wrote.
It imports nothing of pytest.
"""

from __future__ import annotations

import random

TYPE = "memref<16xf32>"
GLOBALS = ("G0", "G1")


def _helpers() -> list[str]:
    lines = []
    for index, name in enumerate(GLOBALS):
        lines += [
            f"  func.func @get{index}(%v: {TYPE}) {{",
            f"    %g = memref.get_global @{name} : {TYPE}",
            f"    memref.copy %g, %v : {TYPE} to {TYPE}",
            "    func.return",
            "  }",
            f"  func.func @set{index}(%v: {TYPE}) {{",
            f"    %g = memref.get_global @{name} : {TYPE}",
            f"    memref.copy %v, %g : {TYPE} to {TYPE}",
            "    func.return",
            "  }",
        ]
    lines += [
        f"  func.func @bump(%v: {TYPE}) {{",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        "    %c16 = arith.constant 16 : index",
        "    %one = arith.constant 1.0 : f32",
        "    scf.for %i = %c0 to %c16 step %c1 {",
        f"      %x = memref.load %v[%i] : {TYPE}",
        "      %y = arith.addf %x, %one : f32",
        f"      memref.store %y, %v[%i] : {TYPE}",
        "    }",
        "    func.return",
        "  }",
    ]
    return lines


class _Body:
    """The statements of `@f`, with the values each may read and write."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[str] = [
            "    %c0 = arith.constant 0 : index",
            "    %c1 = arith.constant 1 : index",
            "    %c16 = arith.constant 16 : index",
            "    %k = arith.constant 1.5 : f32",
        ]
        self.readable = ["%a0", "%a1", "%a2"]  # arguments and globals hold data from the start
        self.writable = ["%a0", "%a1", "%a2"]
        self.temporaries: list[str] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def take_global(self) -> str:
        value = self.fresh("g")
        self.lines.append(f"    {value} = memref.get_global @{self.rng.choice(GLOBALS)} : {TYPE}")
        self.readable.append(value)
        self.writable.append(value)
        return value

    def target(self) -> str:
        """A new temporary (most often), or a value already there."""
        if self.rng.random() < 0.55:
            value = self.fresh("t")
            self.lines.append(f"    {value} = memref.alloc() : {TYPE}")
            self.temporaries.append(value)
            self.writable.append(value)
            return value
        return self.rng.choice(self.writable)

    def written(self, value: str) -> None:
        if value not in self.readable:
            self.readable.append(value)

    def statement(self) -> None:
        rng = self.rng
        kind = rng.choice(("copy", "copy", "axpy", "axpy", "local", "local", "global", "get", "set", "bump", "calls"))
        if kind == "global":
            self.take_global()
        elif kind == "copy":
            source, target = rng.choice(self.readable), self.target()
            if source != target:
                self.lines.append(f"    memref.copy {source}, {target} : {TYPE} to {TYPE}")
                self.written(target)
        elif kind == "axpy":
            self.axpy(rng.choice(self.readable), rng.choice(self.readable), self.target())
        elif kind == "local":  # temporaries only: free to move between the other statements
            held = [value for value in self.temporaries if value in self.readable] or self.readable
            self.axpy(rng.choice(held), rng.choice(held), self.target())
        elif kind == "get":
            target = self.target()
            self.lines.append(f"    func.call @get{rng.randrange(len(GLOBALS))}({target}) : ({TYPE}) -> ()")
            self.written(target)
        elif kind == "set":
            self.lines.append(f"    func.call @set{rng.randrange(len(GLOBALS))}({rng.choice(self.readable)}) : ({TYPE}) -> ()")
        elif kind == "bump":
            self.lines.append(f"    func.call @bump({rng.choice(self.readable)}) : ({TYPE}) -> ()")
        else:  # adjacent calls: a read of a global next to a write of it
            index = rng.randrange(len(GLOBALS))
            target = self.target()
            first = f"    func.call @get{index}({target}) : ({TYPE}) -> ()"
            second = f"    func.call @set{index}({rng.choice(self.readable)}) : ({TYPE}) -> ()"
            self.lines += [first, second] if rng.random() < 0.5 else [second, first]
            self.written(target)

    def axpy(self, x: str, y: str, target: str) -> None:
        """target[i] = 1.5 * x[i] + y[i], one element at a time (aliasing is allowed)."""
        i, xi, yi, product, total = (self.fresh(p) for p in ("i", "x", "y", "p", "s"))
        self.lines += [
            f"    scf.for {i} = %c0 to %c16 step %c1 {{",
            f"      {xi} = memref.load {x}[{i}] : {TYPE}",
            f"      {yi} = memref.load {y}[{i}] : {TYPE}",
            f"      {product} = arith.mulf {xi}, %k : f32",
            f"      {total} = arith.addf {product}, {yi} : f32",
            f"      memref.store {total}, {target}[{i}] : {TYPE}",
            "    }",
        ]
        self.written(target)

    def finish(self) -> None:
        """Every temporary ends in an argument, so its value is observed."""
        for value in self.temporaries:
            if value in self.readable:
                self.axpy(value, self.rng.choice(("%a0", "%a1", "%a2")), self.rng.choice(("%a0", "%a1", "%a2")))
        for value in self.temporaries:
            if self.rng.random() < 0.5:
                self.lines.append(f"    memref.dealloc {value} : {TYPE}")


def generate(seed: int, statements: int = 20) -> str:
    """One program (see the module doc); the same text for the same seed."""
    rng = random.Random(seed)
    body = _Body(rng)
    for _ in range(statements):
        body.statement()
    body.finish()
    arguments = ", ".join(f"%a{index}: {TYPE}" for index in range(3))
    lines = ["builtin.module {"]
    lines += [f'  memref.global "private" @{name} : {TYPE} = dense<{0.5 + 2 * index}>'
              for index, name in enumerate(GLOBALS)]
    lines += _helpers()
    lines += [f"  func.func @f({arguments}) {{", *body.lines, "    func.return", "  }"]
    outputs = ", ".join(f"%o{index}: {TYPE}" for index in range(4))
    lines += [
        f"  func.func @main(%i0: {TYPE}, %i1: {TYPE}, {outputs}) {{",
        f"    memref.copy %i0, %o0 : {TYPE} to {TYPE}",
        f"    memref.copy %i1, %o1 : {TYPE} to {TYPE}",
        f"    %G0 = memref.get_global @G0 : {TYPE}",
        f"    %G1 = memref.get_global @G1 : {TYPE}",
    ]
    choices = ("%o0", "%o1", "%G0", "%G1")
    passed = ", ".join(rng.choice(choices) for _ in range(3))
    lines += [
        f"    func.call @f({passed}) : ({TYPE}, {TYPE}, {TYPE}) -> ()",
        f"    memref.copy %G0, %o2 : {TYPE} to {TYPE}",
        f"    memref.copy %G1, %o3 : {TYPE} to {TYPE}",
        "    func.return",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"
