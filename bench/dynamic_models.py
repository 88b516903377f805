"""Programs with dynamic shapes for `bench/dynamic`: plain memref IR with scf loops, every
intermediate a `memref.alloc` whose size is an expression of the dimensions.

- `transformer(d)`: a transformer block over `x: memref<?x?xDxf32>` (batch, seq): layer
  scaling, q/k/v projections, scores (batch x seq x seq), a scaled ReLU in place of the
  softmax, the mix, the output projection, a residual, a two-layer MLP (4D) and a residual;
- `cnn(c)`: a CNN over `x: memref<?x?x?xCxf32>` (batch, resolution, resolution, NHWC): two
  3x3 convolutions with clamped borders, 2x2 max pools (ceildiv(res, 2) rows), a global
  average pool and a classifier;
- `decoder(d)`: one decoder step over a key/value cache of dynamic length: the projections
  of the new token, the caches extended by one row (cache + 1 rows), scores over the whole
  cache, the mix, a residual and an MLP.

The computations are simple (no exp) but real: every value is read and written through
its buffers, so the interpreter checks a plan by execution (`verify_program`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

F32 = "f32"


@dataclass
class Builder:
    lines: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)  # index constants, at the function's top
    counter: int = 0
    constants: dict[int, str] = field(default_factory=dict)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def emit(self, line: str, depth: int = 0) -> None:
        self.lines.append("  " * (depth + 1) + line)

    def index(self, value: int) -> str:
        if value not in self.constants:
            name = f"%c{value}"
            self.header.append(f"  {name} = arith.constant {value} : index")
            self.constants[value] = name
        return self.constants[value]


def memref_type(dims: list[str | int]) -> str:
    return "memref<" + "x".join("?" if isinstance(d, str) else str(d) for d in dims) + "xf32>"


def bound(b: Builder, extent: str | int) -> str:
    return extent if isinstance(extent, str) else b.index(extent)


class Tensor:
    def __init__(self, name: str, dims: list[str | int]):
        self.name, self.dims = name, dims

    @property
    def type(self) -> str:
        return memref_type(self.dims)


def alloc(b: Builder, stem: str, dims: list[str | int]) -> Tensor:
    name = f"%{stem}"
    dynamic = ", ".join(d for d in dims if isinstance(d, str))
    b.emit(f"{name} = memref.alloc({dynamic}) : {memref_type(dims)}")
    return Tensor(name, dims)


def dealloc(b: Builder, *tensors: Tensor) -> None:
    for tensor in tensors:
        b.emit(f"memref.dealloc {tensor.name} : {tensor.type}")


def loops(b: Builder, extents: list[str | int], depth: int = 0) -> tuple[list[str], int]:
    """Opens nested scf.for loops over `extents`; returns the induction variables and the depth."""
    ivs = []
    zero, one = b.index(0), b.index(1)
    for extent in extents:
        iv = b.fresh("i")
        b.emit(f"scf.for {iv} = {zero} to {bound(b, extent)} step {one} {{", depth)
        ivs.append(iv)
        depth += 1
    return ivs, depth


def close(b: Builder, depth: int, down_to: int = 0) -> None:
    while depth > down_to:
        depth -= 1
        b.emit("}", depth)


def load(b: Builder, tensor: Tensor, ivs: list[str], depth: int) -> str:
    value = b.fresh("v")
    b.emit(f"{value} = memref.load {tensor.name}[{', '.join(ivs)}] : {tensor.type}", depth)
    return value


def store(b: Builder, value: str, tensor: Tensor, ivs: list[str], depth: int) -> None:
    b.emit(f"memref.store {value}, {tensor.name}[{', '.join(ivs)}] : {tensor.type}", depth)


def const_f(b: Builder, value: float, depth: int) -> str:
    name = b.fresh("f")
    b.emit(f"{name} = arith.constant {value!r} : f32", depth)
    return name


def pointwise(b: Builder, out: Tensor, ins: list[Tensor], op: str, scale: float | None = None) -> None:
    """out = op(ins...) elementwise (`addf` of two, `relu` / `scale` of one)."""
    ivs, depth = loops(b, out.dims)
    values = [load(b, tensor, ivs, depth) for tensor in ins]
    result = b.fresh("r")
    if op == "addf":
        b.emit(f"{result} = arith.addf {values[0]}, {values[1]} : f32", depth)
    elif op == "relu":
        zero = const_f(b, 0.0, depth)
        scaled = b.fresh("s")
        b.emit(f"{scaled} = arith.mulf {values[0]}, {const_f(b, scale or 1.0, depth)} : f32", depth)
        b.emit(f"{result} = arith.maximumf {scaled}, {zero} : f32", depth)
    else:
        b.emit(f"{result} = arith.mulf {values[0]}, {const_f(b, scale or 1.0, depth)} : f32", depth)
    store(b, result, out, ivs, depth)
    close(b, depth)


def reduce(b: Builder, out: Tensor, extent: str | int, terms, depth: int, ivs: list[str]) -> None:
    """out[ivs] = sum over r < extent of terms(r, depth) (a product of two loads)."""
    zero = const_f(b, 0.0, depth)
    acc, r, total = b.fresh("acc"), b.fresh("k"), b.fresh("sum")
    b.emit(f"{total} = scf.for {r} = {b.index(0)} to {bound(b, extent)} step {b.index(1)} "
           f"iter_args({acc} = {zero}) -> (f32) {{", depth)
    left, right = terms(r, depth + 1)
    product, following = b.fresh("p"), b.fresh("n")
    b.emit(f"{product} = arith.mulf {left}, {right} : f32", depth + 1)
    b.emit(f"{following} = arith.addf {acc}, {product} : f32", depth + 1)
    b.emit(f"scf.yield {following} : f32", depth + 1)
    b.emit("}", depth)
    store(b, total, out, ivs, depth)


def linear(b: Builder, out: Tensor, inp: Tensor, weight: Tensor) -> None:
    """out[..., n] = sum_k inp[..., k] * weight[k, n]."""
    ivs, depth = loops(b, out.dims)
    reduce(b, out, inp.dims[-1],
           lambda r, d: (load(b, inp, ivs[:-1] + [r], d), load(b, weight, [r, ivs[-1]], d)), depth, ivs)
    close(b, depth)


def function(name: str, arguments: list[str], body: list[str]) -> str:
    return f"func.func @{name}({', '.join(arguments)}) {{\n" + "\n".join(body) + "\n  func.return\n}\n"


def transformer(d: int = 16, batch: str = "batch=1..8@4", seq: str = "seq=1..2048@512") -> str:
    b = Builder()
    zero, one = b.index(0), b.index(1)
    b.emit(f"%batch = memref.dim %x, {zero} : memref<?x?x{d}xf32>")
    b.emit(f"%seq = memref.dim %x, {one} : memref<?x?x{d}xf32>")
    x = Tensor("%x", ["%batch", "%seq", d])
    weights = {name: Tensor(f"%w{name}", [d, d]) for name in ("q", "k", "v", "o")}
    up, down = Tensor("%wup", [d, 4 * d]), Tensor("%wdown", [4 * d, d])
    out = Tensor("%out", ["%batch", "%seq", d])
    shape = ["%batch", "%seq", d]
    normed = alloc(b, "normed", shape)
    pointwise(b, normed, [x], "scale", 0.5)
    q, k, v = (alloc(b, name, shape) for name in ("q", "k", "v"))
    for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
        linear(b, tensor, normed, weights[name])
    dealloc(b, normed)
    scores = alloc(b, "scores", ["%batch", "%seq", "%seq"])
    ivs, depth = loops(b, scores.dims)
    reduce(b, scores, d, lambda r, dd: (load(b, q, [ivs[0], ivs[1], r], dd), load(b, k, [ivs[0], ivs[2], r], dd)),
           depth, ivs)
    close(b, depth)
    dealloc(b, q, k)
    probs = alloc(b, "probs", ["%batch", "%seq", "%seq"])
    pointwise(b, probs, [scores], "relu", 0.25)
    dealloc(b, scores)
    mixed = alloc(b, "mixed", shape)
    ivs, depth = loops(b, mixed.dims)
    reduce(b, mixed, "%seq", lambda r, dd: (load(b, probs, [ivs[0], ivs[1], r], dd), load(b, v, [ivs[0], r, ivs[2]], dd)),
           depth, ivs)
    close(b, depth)
    dealloc(b, probs, v)
    projected = alloc(b, "projected", shape)
    linear(b, projected, mixed, weights["o"])
    dealloc(b, mixed)
    residual = alloc(b, "residual", shape)
    pointwise(b, residual, [projected, x], "addf")
    dealloc(b, projected)
    hidden = alloc(b, "hidden", ["%batch", "%seq", 4 * d])
    linear(b, hidden, residual, up)
    active = alloc(b, "active", ["%batch", "%seq", 4 * d])
    pointwise(b, active, [hidden], "relu", 1.0)
    dealloc(b, hidden)
    ffn = alloc(b, "ffn", shape)
    linear(b, ffn, active, down)
    dealloc(b, active)
    pointwise(b, out, [ffn, residual], "addf")
    dealloc(b, ffn, residual)
    arguments = [
        f'%x: memref<?x?x{d}xf32> {{scratchpad.dims = ["{batch}", "{seq}"]}}',
        *(f"%w{name}: memref<{d}x{d}xf32>" for name in ("q", "k", "v", "o")),
        f"%wup: memref<{d}x{4 * d}xf32>",
        f"%wdown: memref<{4 * d}x{d}xf32>",
        f'%out: memref<?x?x{d}xf32> {{scratchpad.dims = ["batch", "seq"]}}',
    ]
    return function("main", arguments, b.header + b.lines)


def _conv(b: Builder, out: Tensor, inp: Tensor, weight: Tensor, channels: int) -> None:
    """3x3 convolution, same size, borders clamped."""
    ivs, depth = loops(b, out.dims)
    last_h, last_w = b.fresh("lh"), b.fresh("lw")
    b.emit(f"{last_h} = arith.subi {inp.dims[1]}, {b.index(1)} : index", depth)
    b.emit(f"{last_w} = arith.subi {inp.dims[2]}, {b.index(1)} : index", depth)
    zero = const_f(b, 0.0, depth)
    acc = zero
    for dy in range(3):
        for dx in range(3):
            row, col = b.fresh("y"), b.fresh("x")
            for target, base, offset, last in ((row, ivs[1], dy, last_h), (col, ivs[2], dx, last_w)):
                shifted, low = b.fresh("t"), b.fresh("t")
                b.emit(f"{shifted} = arith.addi {base}, {b.index(offset)} : index", depth)
                b.emit(f"{low} = arith.maxsi {shifted}, {b.index(1)} : index", depth)
                moved = b.fresh("t")
                b.emit(f"{moved} = arith.subi {low}, {b.index(1)} : index", depth)
                b.emit(f"{target} = arith.minui {moved}, {last} : index", depth)
            for channel in range(0, channels, max(channels // 2, 1)):  # two input channels per tap
                value = load(b, inp, [ivs[0], row, col, b.index(channel)], depth)
                tap = load(b, weight, [b.index(dy), b.index(dx), b.index(channel), ivs[3]], depth)
                product, total = b.fresh("p"), b.fresh("a")
                b.emit(f"{product} = arith.mulf {value}, {tap} : f32", depth)
                b.emit(f"{total} = arith.addf {acc}, {product} : f32", depth)
                acc = total
    result = b.fresh("r")
    b.emit(f"{result} = arith.maximumf {acc}, {zero} : f32", depth)
    store(b, result, out, ivs, depth)
    close(b, depth)


def _pool(b: Builder, out: Tensor, inp: Tensor) -> None:
    """2x2 max pool, stride 2, the last odd row and column clamped."""
    ivs, depth = loops(b, out.dims)
    values = []
    for dy in range(2):
        for dx in range(2):
            coordinates = []
            for base, offset, extent in ((ivs[1], dy, inp.dims[1]), (ivs[2], dx, inp.dims[2])):
                doubled, shifted, last, clamped = b.fresh("t"), b.fresh("t"), b.fresh("t"), b.fresh("t")
                b.emit(f"{doubled} = arith.muli {base}, {b.index(2)} : index", depth)
                b.emit(f"{shifted} = arith.addi {doubled}, {b.index(offset)} : index", depth)
                b.emit(f"{last} = arith.subi {extent}, {b.index(1)} : index", depth)
                b.emit(f"{clamped} = arith.minui {shifted}, {last} : index", depth)
                coordinates.append(clamped)
            values.append(load(b, inp, [ivs[0], *coordinates, ivs[3]], depth))
    best = values[0]
    for value in values[1:]:
        larger = b.fresh("m")
        b.emit(f"{larger} = arith.maximumf {best}, {value} : f32", depth)
        best = larger
    store(b, best, out, ivs, depth)
    close(b, depth)


def cnn(c: int = 8, classes: int = 10, batch: str = "batch=1..32@8", res: str = "res=1..224@64") -> str:
    b = Builder()
    b.emit(f"%batch = memref.dim %x, {b.index(0)} : memref<?x?x?x{c}xf32>")
    b.emit(f"%res = memref.dim %x, {b.index(1)} : memref<?x?x?x{c}xf32>")
    b.emit(f"%half = arith.ceildivui %res, {b.index(2)} : index")
    b.emit(f"%quarter = arith.ceildivui %half, {b.index(2)} : index")
    x = Tensor("%x", ["%batch", "%res", "%res", c])
    w1, w2 = Tensor("%w1", [3, 3, c, 2 * c]), Tensor("%w2", [3, 3, 2 * c, 4 * c])
    wfc, out = Tensor("%wfc", [4 * c, classes]), Tensor("%out", ["%batch", classes])
    conv1 = alloc(b, "conv1", ["%batch", "%res", "%res", 2 * c])
    _conv(b, conv1, x, w1, c)
    pool1 = alloc(b, "pool1", ["%batch", "%half", "%half", 2 * c])
    _pool(b, pool1, conv1)
    dealloc(b, conv1)
    conv2 = alloc(b, "conv2", ["%batch", "%half", "%half", 4 * c])
    _conv(b, conv2, pool1, w2, 2 * c)
    dealloc(b, pool1)
    pool2 = alloc(b, "pool2", ["%batch", "%quarter", "%quarter", 4 * c])
    _pool(b, pool2, conv2)
    dealloc(b, conv2)
    pooled = alloc(b, "pooled", ["%batch", 4 * c])
    ivs, depth = loops(b, pooled.dims)
    zero = const_f(b, 0.0, depth)
    rows = b.fresh("s")
    b.emit(f"{rows} = scf.for %r = {b.index(0)} to %quarter step {b.index(1)} iter_args(%ra = {zero}) -> (f32) {{", depth)
    cols = b.fresh("s")
    b.emit(f"{cols} = scf.for %q = {b.index(0)} to %quarter step {b.index(1)} iter_args(%qa = %ra) -> (f32) {{", depth + 1)
    value = load(b, pool2, [ivs[0], "%r", "%q", ivs[1]], depth + 2)
    b.emit(f"%qn = arith.addf %qa, {value} : f32", depth + 2)
    b.emit("scf.yield %qn : f32", depth + 2)
    b.emit("}", depth + 1)
    b.emit(f"scf.yield {cols} : f32", depth + 1)
    b.emit("}", depth)
    store(b, rows, pooled, ivs, depth)
    close(b, depth)
    dealloc(b, pool2)
    linear(b, out, pooled, wfc)
    dealloc(b, pooled)
    arguments = [
        f'%x: memref<?x?x?x{c}xf32> {{scratchpad.dims = ["{batch}", "{res}", "res"]}}',
        f"%w1: memref<3x3x{c}x{2 * c}xf32>",
        f"%w2: memref<3x3x{2 * c}x{4 * c}xf32>",
        f"%wfc: memref<{4 * c}x{classes}xf32>",
        f'%out: memref<?x{classes}xf32> {{scratchpad.dims = ["batch"]}}',
    ]
    return function("main", arguments, b.header + b.lines)


def decoder(d: int = 16, cache: str = "cache=1..4096@1024") -> str:
    b = Builder()
    b.emit(f"%cache = memref.dim %kc, {b.index(0)} : memref<?x{d}xf32>")
    b.emit(f"%rows = arith.addi %cache, {b.index(1)} : index")
    x, kc, vc = Tensor("%x", [d]), Tensor("%kc", ["%cache", d]), Tensor("%vc", ["%cache", d])
    weights = {name: Tensor(f"%w{name}", [d, d]) for name in ("q", "k", "v")}
    up, down, out = Tensor("%wup", [d, 4 * d]), Tensor("%wdown", [4 * d, d]), Tensor("%out", [d])
    tokens = {name: alloc(b, name, [d]) for name in ("q", "knew", "vnew")}
    for name, weight in (("q", "q"), ("knew", "k"), ("vnew", "v")):
        ivs, depth = loops(b, [d])
        reduce(b, tokens[name], d, lambda r, dd, w=weights[weight], ivs=ivs: (load(b, x, [r], dd), load(b, w, [r, ivs[0]], dd)),
               depth, ivs)
        close(b, depth)
    extended = {}
    for name, cached, new in (("keys", kc, tokens["knew"]), ("values", vc, tokens["vnew"])):
        table = alloc(b, name, ["%rows", d])
        ivs, depth = loops(b, ["%cache", d])
        store(b, load(b, cached, ivs, depth), table, ivs, depth)
        close(b, depth)
        ivs, depth = loops(b, [d])
        store(b, load(b, new, ivs, depth), table, ["%cache", ivs[0]], depth)
        close(b, depth)
        extended[name] = table
    dealloc(b, tokens["knew"], tokens["vnew"])
    scores = alloc(b, "scores", ["%rows"])
    ivs, depth = loops(b, ["%rows"])
    reduce(b, scores, d, lambda r, dd: (load(b, tokens["q"], [r], dd), load(b, extended["keys"], [ivs[0], r], dd)),
           depth, ivs)
    close(b, depth)
    dealloc(b, tokens["q"], extended["keys"])
    probs = alloc(b, "probs", ["%rows"])
    pointwise(b, probs, [scores], "relu", 0.25)
    dealloc(b, scores)
    attended = alloc(b, "attended", [d])
    ivs, depth = loops(b, [d])
    reduce(b, attended, "%rows", lambda r, dd: (load(b, probs, [r], dd), load(b, extended["values"], [r, ivs[0]], dd)),
           depth, ivs)
    close(b, depth)
    dealloc(b, probs, extended["values"])
    residual = alloc(b, "residual", [d])
    pointwise(b, residual, [attended, x], "addf")
    dealloc(b, attended)
    hidden = alloc(b, "hidden", [4 * d])
    ivs, depth = loops(b, [4 * d])
    reduce(b, hidden, d, lambda r, dd: (load(b, residual, [r], dd), load(b, up, [r, ivs[0]], dd)), depth, ivs)
    close(b, depth)
    active = alloc(b, "active", [4 * d])
    pointwise(b, active, [hidden], "relu", 1.0)
    dealloc(b, hidden)
    ffn = alloc(b, "ffn", [d])
    ivs, depth = loops(b, [d])
    reduce(b, ffn, 4 * d, lambda r, dd: (load(b, active, [r], dd), load(b, down, [r, ivs[0]], dd)), depth, ivs)
    close(b, depth)
    dealloc(b, active)
    pointwise(b, out, [ffn, residual], "addf")
    dealloc(b, ffn, residual)
    arguments = [
        f"%x: memref<{d}xf32>",
        f'%kc: memref<?x{d}xf32> {{scratchpad.dims = ["{cache}"]}}',
        f'%vc: memref<?x{d}xf32> {{scratchpad.dims = ["cache"]}}',
        *(f"%w{name}: memref<{d}x{d}xf32>" for name in ("q", "k", "v")),
        f"%wup: memref<{d}x{4 * d}xf32>",
        f"%wdown: memref<{4 * d}x{d}xf32>",
        f"%out: memref<{d}xf32>",
    ]
    return function("main", arguments, b.header + b.lines)


MODELS = {"transformer": transformer, "cnn": cnn, "decoder": decoder}


def random_symbolic(seed: int, count: int = 60):
    """A plain-data problem (no program): `count` buffers with random lifetimes, sizes drawn
    from five expressions of batch and seq (projections, scores, a ceil-divided pool, a
    per-batch vector, constants) and alignments 1, 4 or 64. Returns (buffers, ranges)."""
    import random

    from telamalloc.runtime.alloc.parametric import SymbolicBuffer, parse_ranges
    from telamalloc.runtime.alloc.size_expressions import add, ceildiv, const, mul, sym

    rng = random.Random(seed)
    seq, batch = sym("seq"), sym("batch")
    shapes = [mul(4, batch, seq, 64), mul(4, batch, seq, seq), mul(256, ceildiv(seq, 2)), add(mul(64, batch), 128)]
    buffers = []
    for index in range(count):
        start = rng.randrange(0, 3 * count // 2)
        size = const(rng.randrange(1, 65536)) if rng.random() < 0.2 else rng.choice(shapes)
        buffers.append(SymbolicBuffer(f"b{index}", start, start + rng.randrange(1, 10), size, rng.choice([1, 4, 64])))
    return buffers, parse_ranges("batch=1..8@4 seq=1..2048@512")
