"""Seeded generator of buffer traces shaped like deep networks, for benchmarks and tests.

A trace is a program of operators run one per program point. The network is a chain of
segments (a training step with gradient checkpointing, or inference), each segment a stage
of a convolutional or transformer model with its own batch, resolution and width:

- every operator writes one activation, read by the next operator (lifetime 2 points), or
  by the operator ending its residual block (a skip connection of 2..7 points);
- U-Net style stages keep the encoder outputs until the mirrored decoder operator (nested
  skips, up to a segment long);
- training segments save the forward activations until their backward operator, which
  writes a gradient of the same size (nested, V-shaped lifetimes: the live set grows while
  the forward pass runs and shrinks in the backward pass);
- a third of the operators need a workspace for that one point (sizes log-uniform from
  4 KiB to 8 MiB, 256-byte multiples); some stream their weights in one point before use;
- 0.1% of the buffers are small parameters (biases, norms) live for the whole program.

One batch size per trace; each segment is a stage of the model (deeper stages: twice the
channels, half the pixels), so many segments come close to LOAD, as in real networks.

Sizes come from shapes (batch x channels x height x width x 2 bytes for fp16, bottleneck
expansions 1/4..4x, weight tensors c_in x c_out x k x k), so they vary over five orders of
magnitude with many distinct values: this is where decreasing-size greedy placement leaves
holes (a peak a few percent above LOAD). About half of the buffers
ask for 64-byte alignment, a few for 256 bytes.

Limits: the shapes are plausible, not measured from real models; the trace has exactly
``buffers`` buffers (the last segment is cut short), ids are 0..buffers-1. Deterministic:
the same (buffers, seed) gives the same trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.problem import Buffer, Problem

CHANNELS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048)
RESOLUTIONS = (7, 14, 28, 56, 112)
BATCHES = (1, 2, 4, 8, 16)
EXPANSIONS = (0.25, 0.5, 1.0, 1.0, 1.0, 2.0, 4.0)
WEIGHT_SHARE = 0.001


@dataclass(frozen=True)
class Trace:
    """A generated trace as int64 columns (one entry per buffer, id = index)."""

    starts: np.ndarray
    ends: np.ndarray
    sizes: np.ndarray
    alignments: np.ndarray

    def problem(self, capacity: int | None = None) -> Problem:
        rows = zip(self.starts.tolist(), self.ends.tolist(), self.sizes.tolist(), self.alignments.tolist())
        return Problem([Buffer(index, start, end, size, alignment) for index, (start, end, size, alignment) in enumerate(rows)], capacity)


class _Builder:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.sizes: list[int] = []

    def add(self, start: int, end: int, size: int) -> None:
        self.starts.append(start)
        self.ends.append(max(end, start + 1))
        self.sizes.append(max(int(size), 1))

    def __len__(self) -> int:
        return len(self.sizes)


def _activation_size(rng: np.random.Generator, batch: int, channels: int, resolution: int) -> int:
    expansion = EXPANSIONS[int(rng.integers(len(EXPANSIONS)))]
    width = max(8, int(channels * expansion * rng.uniform(0.5, 1.5)) // 8 * 8)  # pruned / odd widths
    return int(batch * width * resolution * resolution * 2)


def _workspace_size(rng: np.random.Generator) -> int:
    return int(np.exp(rng.uniform(np.log(4096), np.log(8 << 20))) // 256 * 256 + 256)


def _segment(builder: _Builder, rng: np.random.Generator, time: int, limit: int, batch: int) -> int:
    """Append one segment starting at program point ``time``; return the next free point."""
    training = rng.random() < 0.7
    unet = rng.random() < 0.25
    operators = int(rng.integers(28, 37))
    stage = int(rng.integers(0, 5))  # deeper stages: twice the channels, half the pixels (c x r^2 alike)
    channels = CHANNELS[int(rng.integers(3, 6))] << stage
    resolution = max(7, int(round(56 / 2 ** (stage / 2))))
    block = int(rng.integers(2, 8))
    forward: list[tuple[int, int]] = []  # (buffer index, size) of each forward activation
    block_input = -1
    for step in range(operators):
        if len(builder) >= limit:
            return time
        t = time + step
        size = _activation_size(rng, batch, channels, resolution)
        index = len(builder)
        builder.add(t, t + 2, size)
        forward.append((index, size))
        if step % block == 0:
            if block_input >= 0:
                builder.ends[block_input] = max(builder.ends[block_input], t + 1)  # residual add
            block_input = index
        if rng.random() < 0.33 and len(builder) < limit:
            builder.add(t, t + 1, _workspace_size(rng))
        if rng.random() < 0.15 and len(builder) < limit:
            k = (1, 3)[int(rng.integers(2))]
            builder.add(t - 1 if t > 0 else t, t + 1, channels * channels * k * k * 2 // int(rng.integers(1, 8)))
    time += operators
    next_segment = time  # pipelined: the next segment's forward runs beside this backward
    if unet:
        # encoder outputs live until the mirrored decoder operator
        for position, (index, _) in enumerate(forward[: len(forward) // 2]):
            builder.ends[index] = max(builder.ends[index], time + (len(forward) // 2 - position))
    if training:
        # backward: each saved activation dies at its backward operator, which writes a
        # gradient of the same size read by the next backward operator
        for position, (index, size) in enumerate(reversed(forward)):
            if len(builder) >= limit:
                break
            t = time + position
            builder.ends[index] = max(builder.ends[index], t + 1)
            builder.add(t, t + 2, size)
            if rng.random() < 0.33 and len(builder) < limit:
                builder.add(t, t + 1, _workspace_size(rng))
    return next_segment


def generate(buffers: int, seed: int = 0) -> Trace:
    """A trace of exactly ``buffers`` buffers (see the module docstring)."""
    if buffers < 0:
        raise ValueError(f"buffers '{buffers}' must be >= 0")
    rng = np.random.default_rng(seed)
    builder = _Builder(rng)
    weights = int(buffers * WEIGHT_SHARE)
    batch = BATCHES[int(rng.integers(len(BATCHES)))]
    time = 0
    while len(builder) < buffers - weights:
        time = _segment(builder, rng, time, buffers - weights, batch)
    horizon = max(time, max(builder.ends, default=1))
    for _ in range(buffers - len(builder)):
        # biases, norms, optimizer scalars: small next to the activations
        builder.add(0, horizon, CHANNELS[int(rng.integers(len(CHANNELS)))] * int(rng.integers(1, 9)) * 4)
    starts = np.array(builder.starts, dtype=np.int64)
    ends = np.array(builder.ends, dtype=np.int64)
    sizes = np.array(builder.sizes, dtype=np.int64)
    draw = rng.random(buffers)
    alignments = np.where(draw < 0.45, 64, np.where(draw < 0.5, 256, 1)).astype(np.int64)
    return Trace(starts, ends, sizes, alignments)


def deep_network_problem(buffers: int, seed: int = 0, capacity: int | None = None) -> Problem:
    """``generate(buffers, seed)`` as a Problem."""
    return generate(buffers, seed).problem(capacity)
