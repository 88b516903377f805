"""Trace families of execution schedules whose lifetimes do not nest: pipeline-parallel
training (``crossing``), caches reallocated larger while the old copy is live
(``growing``) and mixture-of-experts layers (``routing``). Registered in ``families.FAMILIES``.

- ``crossing``: one stage of a pipeline-parallel training run. The model is drawn once:
  L layers (4..24) with their widths, M micro-batches per step (4..32) and the schedule:
  1F1B (a warm-up of W = 2..8 forwards, then one forward and one backward in turn), GPipe
  with first-in first-out backwards (all forwards, then the backwards in the same order)
  or zero-bubble (1F1B whose weight-gradient halves run after the next micro-batch's
  backward). Each forward saves one to three activations per layer that live until that
  micro-batch's backward (or weight-gradient) operator: micro-batch i's activations are
  born before i+1's and die before them, so lifetimes *cross* instead of nesting (inside
  one micro-batch they nest, V-shaped). In half the models the micro-batches are packed
  variable-length sequences (0.4..1 x the full size, drawn anew every step); every forward
  receives its input from the previous stage and sends its output to the next (buffers
  living a few points), weight gradients accumulate over the step and the optimizer reads
  them at its end.
- ``growing``: a serving loop with continuous batching: 1..16 requests decode one token
  each per point, each with a cache of 2..32 KiB per token that is reallocated larger when
  the tokens outgrow it: by a factor of 1.05..1.5 or by a chunk of 16..256 tokens, drawn
  once per trace. The new copy is allocated while the old one is still live (the copy
  reads the old one at the new one's first point), so the two overlap for one point and
  the old space cannot hold the new copy. Prompts and outputs are lognormal (medians
  32..2,048 and 16..1,024 tokens); a finished request is replaced by a new one whose cache
  holds its prompt; each step writes 0..4 short temporaries per request.
- ``routing``: mixture-of-experts transformer layers: E = 8..64 experts, top-1 or top-2
  routing of 512..8192 tokens per batch over a Dirichlet-skewed split (a few hot experts,
  many cold ones, some with no tokens), so the per-expert buffers (dispatched tokens,
  expert hidden, expert output) have very different sizes that change every layer. The
  experts run one after another; each expert's weights (one equal size per model) are
  prefetched 1..4 experts ahead of their use; the dispatched inputs live from the
  all-to-all until their expert runs and the outputs from there until the combine, so
  their lifetimes form staircases. An attention block (short activations, a KV write)
  sits between the MoE layers.

Sizes are fp16 tensor sizes rounded to 256 bytes; the shapes are invented, not measured.
Deterministic for (buffers, seed); exactly ``buffers`` buffers, ids 0..buffers-1.
"""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.generators.builder import KIB, MIB, TraceBuilder, check_count, log_uniform, round_size
from telamalloc.runtime.alloc.generators.tracegen import Trace
from telamalloc.runtime.alloc.problem import round_up


def _pipeline_order(micro: int, inflight: int, kind: str) -> list[tuple[str, int]]:
    """The operators of one pipeline stage's training step: ("F", i) forward, ("B", i)
    backward, ("W", i) weight gradient (zero-bubble only) of micro-batch i."""
    if kind == "gpipe":
        return [("F", i) for i in range(micro)] + [("B", i) for i in range(micro)]
    order: list[tuple[str, int]] = [("F", i) for i in range(inflight)]
    delayed: list[int] = []
    for i in range(micro):
        order.append(("B", i))
        if kind == "zero-bubble":
            order.extend(("W", j) for j in delayed)
            delayed = [i]
        if i + inflight < micro:
            order.append(("F", i + inflight))
    order.extend(("W", j) for j in delayed)
    return order


class _Stage:
    """One pipeline stage of a model (drawn once per trace) and the buffers of its current
    training step."""

    def __init__(self, out: TraceBuilder, rng: np.random.Generator):
        self.out, self.rng = out, rng
        self.layers = int(rng.integers(4, 25))
        self.micro = int(rng.integers(4, 33))
        self.kind = str(rng.choice(("1f1b", "1f1b", "gpipe", "zero-bubble")))
        self.inflight = min(self.micro, int(rng.integers(2, 9)))
        scale = log_uniform(rng, 256 * KIB, 16 * MIB)  # tokens x hidden x 2 bytes
        self.widths = [scale * float(rng.choice((0.5, 1.0, 1.0, 2.0, 4.0))) for _ in range(self.layers)]
        self.kept = int(rng.integers(1, 4))  # activations saved per layer
        self.variable = rng.random() < 0.5  # packed variable-length sequences
        self.weights = [round_size(log_uniform(rng, 64 * KIB, 16 * MIB)) for _ in range(self.layers)]
        self.step()

    def step(self) -> None:
        """A new training step: fresh micro-batch lengths and gradient accumulators."""
        self.lengths = self.rng.uniform(0.4, 1.0, self.micro) if self.variable else np.ones(self.micro)
        self.saved: dict[int, list[list[int]]] = {}
        self.gradients = [-1] * self.layers

    def forward(self, i: int, t: int) -> int:
        out, rng, length = self.out, self.rng, float(self.lengths[i])
        received = out.add(t, t + 2, round_size(self.widths[0] * length))  # from the previous stage
        saved = []
        for layer in range(self.layers):
            width = self.widths[layer] * length
            saved.append([out.add(t, t + 1, round_size(width * rng.uniform(0.5, 1.5))) for _ in range(self.kept)])
            out.add(t, t + 2, round_size(width * float(rng.choice((1.0, 2.0, 4.0)))))  # a temporary
            t += 1
        out.extend(received, t)
        out.add(t - 1, t + int(rng.integers(1, 4)), round_size(self.widths[-1] * length))  # async send
        self.saved[i] = saved
        return t

    def backward(self, i: int, t: int, weights_too: bool) -> int:
        out, rng, length = self.out, self.rng, float(self.lengths[i])
        out.add(t, t + 2, round_size(self.widths[-1] * length))  # the gradient from the next stage
        for layer in reversed(range(self.layers)):
            if weights_too:
                for index in self.saved[i][layer]:
                    out.extend(index, t + 1)
            out.add(t, t + 2, round_size(self.widths[layer] * length))  # the activation gradient
            if weights_too:
                self._weight_gradient(layer, t)
            t += 1
        out.add(t - 1, t + int(rng.integers(1, 4)), round_size(self.widths[0] * length))  # async send back
        return t

    def weight_gradient(self, i: int, t: int) -> int:
        for layer in reversed(range(self.layers)):
            for index in self.saved[i][layer]:
                self.out.extend(index, t + 1)
            self._weight_gradient(layer, t)
            t += 1
        return t

    def _weight_gradient(self, layer: int, t: int) -> None:
        if self.gradients[layer] < 0:
            self.gradients[layer] = self.out.add(t, t + 1, self.weights[layer])  # accumulated over the step
        else:
            self.out.extend(self.gradients[layer], t + 1)

    def optimizer(self, t: int) -> int:
        for layer in range(self.layers):
            self.out.extend(self.gradients[layer], t + 1)
            self.out.add(t, t + 1, 2 * self.weights[layer])  # optimizer workspace
            t += 1 if layer % 4 == 3 else 0
        return t + 1


def crossing(buffers: int, seed: int = 0) -> Trace:
    """Pipeline-parallel training: micro-batch lifetimes cross (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 6])
    out = TraceBuilder(buffers)
    stage = _Stage(out, rng)
    t = 0
    while not out.full():
        stage.step()
        for operator, i in _pipeline_order(stage.micro, stage.inflight, stage.kind):
            if out.full():
                break
            if operator == "F":
                t = stage.forward(i, t)
            elif operator == "B":
                t = stage.backward(i, t, weights_too=stage.kind != "zero-bubble")
            else:
                t = stage.weight_gradient(i, t)
        t = stage.optimizer(t)
    return out.trace(rng)


class _Server:
    """The shape of a ``growing`` trace, drawn once: what a token costs, how caches grow,
    how many requests run at once and how long they are."""

    def __init__(self, rng: np.random.Generator):
        self.token = int(rng.choice((2, 4, 8, 16, 32))) * KIB  # cache bytes per token (K and V of a layer group)
        self.geometric = rng.random() < 0.5
        self.factor = float(rng.uniform(1.05, 1.5))  # geometric growth
        self.chunk = int(rng.choice((16, 32, 64, 128, 256)))  # tokens added per reallocation otherwise
        self.concurrency = int(rng.integers(1, 17))
        self.prompt = log_uniform(rng, 32, 2048)  # median prompt tokens
        self.output = log_uniform(rng, 16, 1024)  # median generated tokens
        self.temporaries = int(rng.integers(0, 5))  # per request and step
        self.hidden = int(rng.choice((1024, 2048, 4096, 8192)))


class _Request:
    """One request: its cache buffer, reallocated larger when the tokens outgrow it."""

    def __init__(self, server: _Server, rng: np.random.Generator, out: TraceBuilder, t: int):
        self.server = server
        self.tokens = max(1, int(rng.lognormal(np.log(server.prompt), 0.8)))
        self.left = max(1, int(rng.lognormal(np.log(server.output), 0.8)))
        self.capacity = self.tokens if server.geometric else self._chunks(self.tokens)
        self.buffer = out.add(t, t + 1, self.capacity * server.token)

    def _chunks(self, tokens: int) -> int:
        return round_up(tokens, self.server.chunk)

    def act(self, out: TraceBuilder, rng: np.random.Generator, t: int) -> bool:
        """One decode step at ``t``: read the cache, append a token (reallocating the cache
        larger while the old copy is read), write the step's temporaries; False when done."""
        server = self.server
        out.extend(self.buffer, t + 1)
        self.tokens += 1
        if self.tokens > self.capacity:
            grown = int(self.capacity * server.factor) if server.geometric else self._chunks(self.tokens)
            self.capacity = max(self.tokens, grown)
            self.buffer = out.add(t, t + 1, self.capacity * server.token)  # the old copy is read at t: both live
        for _ in range(server.temporaries):
            out.add(t, t + int(rng.integers(1, 3)), round_size(server.hidden * 2 * float(rng.choice((1, 3, 4, 8)))))
        self.left -= 1
        return self.left > 0


def growing(buffers: int, seed: int = 0) -> Trace:
    """Buffers reallocated a little larger while the old copy is live (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 7])
    out = TraceBuilder(buffers)
    server = _Server(rng)
    t = 0
    requests = [_Request(server, rng, out, t) for _ in range(server.concurrency)]
    while not out.full():
        for position in range(len(requests)):  # continuous batching: every request decodes one token
            if out.full():
                break
            if not requests[position].act(out, rng, t):
                requests[position] = _Request(server, rng, out, t + 1)  # the next request joins the batch
        t += 1
    return out.trace(rng)


class _Model:
    """A mixture-of-experts model's shape, drawn once per trace."""

    def __init__(self, rng: np.random.Generator):
        self.experts = int(rng.choice((8, 16, 32, 64)))
        self.top = int(rng.choice((1, 2)))
        self.hidden = int(rng.choice((1024, 2048, 4096)))
        self.ffn = self.hidden * int(rng.choice((1, 2, 4)))
        shards = int(rng.choice((1, 2, 4, 8)))  # tensor parallelism splits each expert's weights
        self.weight = round_size(3 * self.hidden * self.ffn * 2 / shards)
        self.skew = log_uniform(rng, 0.1, 3.0)  # Dirichlet concentration: small, a few hot experts
        self.prefetch = int(rng.integers(1, 5))


def _moe_layer(out: TraceBuilder, rng: np.random.Generator, model: _Model, tokens: int, t: int) -> int:
    hidden = model.hidden
    dispatch = t
    out.add(t, t + 2, tokens * model.experts * 4)  # router logits (fp32)
    out.add(t, t + 2, tokens * model.top * 8)  # routing table
    shares = rng.dirichlet(np.full(model.experts, model.skew))
    counts = rng.multinomial(tokens * model.top, shares)
    t += 1
    outputs = []
    for expert in range(model.experts):
        # the expert's weights arrive `prefetch` experts ahead (before the layer for the first ones)
        out.add(max(0, t - 2 * model.prefetch), t + 2, model.weight, 256)
        count = int(counts[expert])
        if count > 0:
            out.add(dispatch, t + 1, round_size(count * hidden * 2))  # dispatched tokens
            out.add(t, t + 1, round_size(count * model.ffn * 2))  # expert hidden
            outputs.append(out.add(t, t + 2, round_size(count * hidden * 2)))  # expert output
        t += 2
    for index in outputs:
        out.extend(index, t + 1)  # the combine reads every expert's output
    out.add(t, t + 2, round_size(tokens * hidden * 2))  # combined
    return t + 1


def _attention(out: TraceBuilder, rng: np.random.Generator, model: _Model, tokens: int, t: int) -> int:
    size = round_size(tokens * model.hidden * 2)
    residual = out.add(t, t + 6, size)
    out.add(t, t + 2, 3 * size)  # q, k, v
    out.add(t + 1, t + 3, round_size(tokens * int(rng.choice((128, 256, 512))) * 2 * model.hidden // 128))  # scores
    out.add(t + 2, t + 4, size)  # attention output
    out.add(t + 3, t + 5, size)  # projection
    out.extend(residual, t + 6)
    return t + 5


def routing(buffers: int, seed: int = 0) -> Trace:
    """Mixture-of-experts layers with variable per-expert buffers (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 8])
    out = TraceBuilder(buffers)
    model = _Model(rng)
    t = 0
    while not out.full():
        tokens = int(rng.choice((512, 1024, 2048, 4096, 8192)))  # a batch
        for _ in range(int(rng.integers(4, 33))):  # its layers
            if out.full():
                break
            t = _attention(out, rng, model, tokens, t)
            t = _moe_layer(out, rng, model, tokens, t)
    return out.trace(rng)
