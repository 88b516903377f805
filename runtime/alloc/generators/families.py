"""Seeded trace families of different shapes: the tuning suite of the large-problem planner
(``bench/large``) and its tests.

Each family builds a trace of exactly ``buffers`` buffers (ids 0..buffers-1), deterministic
for a given (buffers, seed), as a ``tracegen.Trace``. Each draws its shape parameters
(depths, widths, schedules, rates, size laws) from its seed, so seeds differ in shape, not
only in noise. Sizes are plausible tensor or heap sizes in bytes; the shapes are invented,
not measured. Alignments: 64 or 256 bytes for big tensors, 16 or none for small ones,
unless a family says otherwise.

Nested lifetimes (the families the planner was first tuned on):
- ``deepnet``: a deep network run once, one operator per program point: short activations
  (read by the next one or two operators), skip connections living 10..300 points, a
  workspace for a third of the operators, and 2% long-lived buffers of 64 KiB..4 MiB
  (weights streamed in early, caches) living thousands of points. The shape of issue 17's
  trace, where decreasing-size greedy placement leaves holes.
- ``transformer``: a serving trace of decoder-only transformer blocks: each request runs a
  prefill pass (attention scores of seq x seq per head, MLP 4x expansions, a residual stream
  living through each block) then decode steps of small activations; every layer's K and
  V cache is allocated at prefill and lives until the request ends, and the next request's
  prefill overlaps the previous request's decode (continuous batching).
- ``unet``: CNNs with long skips: U-Net style encoder/decoder passes whose encoder outputs
  live until the mirrored decoder level (nested lifetimes up to a pass long), residual
  blocks inside each level, workspaces; resolutions halve per level, channels double.
- ``training``: training steps without checkpointing: every forward activation lives until
  its backward operator (V-shaped nested lifetimes a whole micro-batch long), each backward
  operator writes a gradient read by the next; weight gradients accumulate over the
  micro-batches of a step (living the whole step), optimizer workspaces at the step's end.
- ``tracegen``: deep-network traces with streamed weights, checkpointed training segments
  and U-Net stages (``tracegen.py``).

Lifetimes that cross, grow or stagger (``pipelines.py``, where each is described in full):
- ``crossing``: pipeline-parallel training (1F1B, GPipe, zero-bubble schedules): each
  micro-batch's activations live until its backward, after several later forwards.
- ``growing``: buffers reallocated a little larger while the old copy is still live.
- ``routing``: mixture-of-experts layers: variable per-expert buffers, prefetched weights.

Classic synthetic shapes (``workloads.py``):
- ``dynamic-storage``: Poisson arrivals, lognormal lifetimes, heavy-tailed sizes.
- ``equal-sizes``: multi-buffered tiles of 1..4 distinct sizes.
- ``huge-and-tiny``: a few huge buffers among many tiny short-lived ones.

``FAMILIES`` maps the names to the functions; ``generate(family, buffers, seed)`` calls one.
"""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.generators.builder import KIB, MIB, TraceBuilder, check_count, log_uniform, round_size
from telamalloc.runtime.alloc.generators.pipelines import crossing, growing, routing
from telamalloc.runtime.alloc.generators.tracegen import Trace
from telamalloc.runtime.alloc.generators.tracegen import generate as _tracegen
from telamalloc.runtime.alloc.generators.workloads import dynamic_storage, equal_sizes, huge_and_tiny


def deepnet(buffers: int, seed: int = 0) -> Trace:
    """Short activations, skips of 10..300 points, 2% long-lived buffers (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 1])
    out = TraceBuilder(buffers)
    long_lived = int(buffers * 0.02)
    t = 0
    while len(out.sizes) < buffers - long_lived:
        # a stage: a run of operators with one activation size scale
        scale = log_uniform(rng, 32 * KIB, 2 * MIB)
        for _ in range(int(rng.integers(20, 200))):
            if len(out.sizes) >= buffers - long_lived:
                break
            size = round_size(scale * rng.choice((0.25, 0.5, 1.0, 1.0, 2.0, 4.0)) * rng.uniform(0.7, 1.3))
            draw = rng.random()
            if draw < 0.1:
                life = int(round(log_uniform(rng, 10, 300)))  # a skip connection
            else:
                life = 2 if draw < 0.8 else 3
            out.add(t, t + life, size)
            if rng.random() < 0.33 and len(out.sizes) < buffers - long_lived:
                out.add(t, t + 1, round_size(log_uniform(rng, 4 * KIB, 4 * MIB)))
            t += 1
    horizon = max(t, 2)
    for _ in range(buffers - len(out.sizes)):
        start = int(rng.integers(0, horizon))
        life = int(round(log_uniform(rng, 1000, max(horizon, 1001))))
        out.add(start, min(start + life, horizon + 1), round_size(log_uniform(rng, 64 * KIB, 4 * MIB)))
    return out.trace(rng)


def transformer(buffers: int, seed: int = 0) -> Trace:
    """Transformer serving with attention and KV-cache buffers (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 2])
    out = TraceBuilder(buffers)
    t = 0
    decoding: list[tuple[int, int, list[int], int]] = []  # (steps left, hidden bytes, cache buffers, heads) per request
    while not out.full():
        layers = int(rng.integers(12, 40))
        hidden = int(rng.choice((1024, 2048, 2560, 4096)))
        heads = hidden // 128
        sequence = int(rng.choice((128, 256, 512, 1024)))
        tokens = sequence * 2  # fp16
        caches: list[int] = []
        for _ in range(layers):  # prefill: one block per layer
            if out.full():
                break
            residual = out.add(t, t + 10, tokens * hidden)
            out.add(t, t + 2, tokens * hidden)  # layer norm
            out.add(t + 1, t + 3, 3 * tokens * hidden)  # q, k, v
            caches.append(out.add(t + 1, t + 2, tokens * hidden))  # k cache: extended below
            caches.append(out.add(t + 1, t + 2, tokens * hidden))  # v cache
            out.add(t + 2, t + 4, heads * sequence * sequence * 2)  # scores
            out.add(t + 3, t + 5, heads * sequence * sequence * 2)  # softmax
            out.add(t + 4, t + 6, tokens * hidden)  # attention output
            out.add(t + 5, t + 7, tokens * hidden)  # projection
            out.add(t + 6, t + 8, 4 * tokens * hidden)  # mlp up
            out.add(t + 7, t + 9, 4 * tokens * hidden)  # activation
            out.add(t + 8, t + 10, tokens * hidden)  # mlp down
            if rng.random() < 0.3:
                out.add(t + 2, t + 3, round_size(log_uniform(rng, 64 * KIB, 8 * MIB)))  # kernel workspace
            out.extend(residual, t + 10)
            t += 8
        decoding.append((int(rng.integers(16, 256)), hidden, caches, heads))
        # decode steps of the running requests until one finishes (then the next prefill)
        while decoding and not out.full():
            for position, (left, width, cache, count) in enumerate(decoding):
                for _ in range(max(1, len(cache) // 8)):  # a few layers' worth of small ops
                    if out.full():
                        break
                    out.add(t, t + 2, 2 * width)
                    out.add(t, t + 2, count * 2 * 64)  # scores of one token
                    out.add(t + 1, t + 3, 8 * width)
                    t += 2
                for index in cache:
                    out.extend(index, t + 1)
                decoding[position] = (left - 1, width, cache, count)
            finished = [entry for entry in decoding if entry[0] <= 0]
            decoding = [entry for entry in decoding if entry[0] > 0]
            if finished or len(decoding) < int(rng.integers(1, 5)):
                break
    return out.trace(rng)


def unet(buffers: int, seed: int = 0) -> Trace:
    """U-Net style CNN passes with long, nested skip connections (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 3])
    out = TraceBuilder(buffers)
    t = 0
    while not out.full():
        levels = int(rng.integers(3, 7))
        batch = int(rng.choice((1, 2, 4, 8)))
        resolution = int(rng.choice((64, 128, 256, 512)))
        channels = int(rng.choice((16, 32, 64)))
        blocks = int(rng.integers(1, 5))
        skips: list[int] = []
        for level in range(levels):  # encoder
            size = batch * (channels << level) * (resolution >> level) ** 2 * 2
            for block in range(blocks):
                block_input = out.add(t, t + 2, size)
                for _ in range(int(rng.integers(2, 4))):
                    out.add(t, t + 2, size * float(rng.choice((0.5, 1.0, 2.0))))
                    if rng.random() < 0.33:
                        out.add(t, t + 1, round_size(log_uniform(rng, 4 * KIB, 8 * MIB)))
                    t += 1
                out.extend(block_input, t + 1)  # residual add
            skips.append(out.add(t, t + 1, size))  # the level's output, read by the decoder
            t += 1
        for level in reversed(range(levels)):  # decoder
            size = batch * (channels << level) * (resolution >> level) ** 2 * 2
            out.extend(skips[level], t + 1)
            for _ in range(blocks * int(rng.integers(2, 4))):
                out.add(t, t + 2, size * float(rng.choice((0.5, 1.0, 2.0))))
                if rng.random() < 0.33:
                    out.add(t, t + 1, round_size(log_uniform(rng, 4 * KIB, 8 * MIB)))
                t += 1
        t += 1
    return out.trace(rng)


def training(buffers: int, seed: int = 0) -> Trace:
    """Training steps: forward activations living until the backward pass (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 4])
    out = TraceBuilder(buffers)
    t = 0
    while not out.full():
        layers = int(rng.integers(20, 120))
        micro_batches = int(rng.integers(1, 5))
        scale = log_uniform(rng, 64 * KIB, 4 * MIB)
        widths = [scale * float(rng.choice((0.25, 0.5, 1.0, 2.0, 4.0))) for _ in range(layers)]
        weights = [round_size(log_uniform(rng, 4 * KIB, 2 * MIB)) for _ in range(layers)]
        gradients = [-1] * layers
        for _ in range(micro_batches):
            saved = []
            for layer in range(layers):  # forward
                saved.append(out.add(t, t + 1, round_size(widths[layer] * rng.uniform(0.9, 1.1))))
                if rng.random() < 0.25:
                    out.add(t, t + 1, round_size(log_uniform(rng, 4 * KIB, 4 * MIB)))
                t += 1
            for layer in reversed(range(layers)):  # backward
                out.extend(saved[layer], t + 1)
                out.add(t, t + 2, round_size(widths[layer]))  # the activation gradient
                if gradients[layer] < 0:
                    gradients[layer] = out.add(t, t + 1, weights[layer])  # accumulated over the step
                if rng.random() < 0.25:
                    out.add(t, t + 1, round_size(log_uniform(rng, 4 * KIB, 4 * MIB)))
                t += 1
        for layer in range(layers):  # optimizer: reads and frees every weight gradient
            out.extend(gradients[layer], t + 1)
            out.add(t, t + 1, 2 * weights[layer])
            t += 1 if layer % 8 == 7 else 0
        t += 1
    return out.trace(rng)


FAMILIES = {
    "deepnet": deepnet,
    "transformer": transformer,
    "unet": unet,
    "training": training,
    "tracegen": _tracegen,
    "crossing": crossing,
    "growing": growing,
    "routing": routing,
    "dynamic-storage": dynamic_storage,
    "equal-sizes": equal_sizes,
    "huge-and-tiny": huge_and_tiny,
}


def generate(family: str, buffers: int, seed: int = 0) -> Trace:
    """A trace of ``family`` (a key of FAMILIES) with exactly ``buffers`` buffers."""
    if family not in FAMILIES:
        raise ValueError(f"unknown trace family '{family}'; use " + ", ".join(f"'{name}'" for name in FAMILIES))
    return FAMILIES[family](buffers, seed)
