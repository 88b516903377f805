"""Synthetic trace families of classic shapes: random dynamic-storage workloads
(``dynamic_storage``), many buffers of a few equal sizes (``equal_sizes``) and a few huge
buffers among many tiny ones (``huge_and_tiny``). Registered in ``families.FAMILIES``
(as "dynamic-storage", "equal-sizes" and "huge-and-tiny").

- ``dynamic_storage``: the classic model of dynamic storage allocation studies (Knuth,
  TAOCP 2.5; Wilson et al., "Dynamic Storage Allocation: A Survey and Critical Review"):
  arrivals form a Poisson process (0.5..50 per point), lifetimes are lognormal (sigma
  0.5..2) with a mean chosen so that 50..5,000 buffers are live on average (Little's law),
  sizes are heavy-tailed: Pareto (alpha 1.1..2.5) above a minimum of 16..1,024 bytes, or
  lognormal, in one trace out of three, capped at 2^20 minimums; rounded up to 8 or 16
  bytes and aligned so, as malloc does.
- ``equal_sizes``: tiled kernels with multi-buffering: 1..4 distinct sizes (4 KiB..16 MiB
  tiles) for the whole trace. The program is a sequence of loop nests of 50..2,000
  iterations; in each, 2..8 streams of tiles (each of one of the sizes, double to
  quadruple buffered: a tile lives 2..4 of its stream's periods of 1..4 points),
  accumulators living the whole nest, and a few buffers handed on to the next nest or the
  one after. 64- or 256-byte alignments.
- ``huge_and_tiny``: 0.01..0.2% of the buffers (at least 2) are huge (16 MiB..1 GiB,
  4 KiB-aligned: weights, KV caches, staging areas) and live 1..50% of the trace at random
  places; the others are tiny (8 bytes..64 KiB, lognormal around 64..1,024 bytes: scalars,
  indices, metadata) arriving as a Poisson process with short lognormal lifetimes, so that
  their live bytes range from a sliver to a good share of the huge ones'.

The sizes are plausible, not measured. Deterministic for (buffers, seed); exactly
``buffers`` buffers, ids 0..buffers-1. ``dynamic_storage`` and ``huge_and_tiny`` are
vectorized (numpy columns), so 10^6 buffers take well under a second.
"""

from __future__ import annotations

import numpy as np

from telamalloc.runtime.alloc.generators.builder import (
    GIB,
    KIB,
    MIB,
    TraceBuilder,
    check_count,
    columns_trace,
    log_uniform,
    round_size,
)
from telamalloc.runtime.alloc.generators.tracegen import Trace


def _poisson_starts(rng: np.random.Generator, count: int, rate: float) -> np.ndarray:
    """Arrival points of a Poisson process of ``rate`` arrivals per point."""
    return np.floor(np.cumsum(rng.exponential(1.0 / rate, count))).astype(np.int64)


def _lognormal_lifetimes(rng: np.random.Generator, count: int, mean: float, sigma: float) -> np.ndarray:
    """Lognormal lifetimes of the given mean (at least one point)."""
    mu = np.log(mean) - sigma * sigma / 2
    return np.maximum(1, np.ceil(rng.lognormal(mu, sigma, count))).astype(np.int64)


def dynamic_storage(buffers: int, seed: int = 0) -> Trace:
    """Poisson arrivals, lognormal lifetimes, heavy-tailed sizes (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 9])
    rate = log_uniform(rng, 0.5, 50.0)
    live = log_uniform(rng, 50.0, 5000.0)
    sigma = float(rng.uniform(0.5, 2.0))
    minimum = int(rng.choice((16, 32, 64, 256, 1024)))
    quantum = int(rng.choice((8, 16)))
    starts = _poisson_starts(rng, buffers, rate)
    lifetimes = _lognormal_lifetimes(rng, buffers, live / rate, sigma)
    if rng.random() < 2 / 3:
        raw = minimum * (1.0 + rng.pareto(float(rng.uniform(1.1, 2.5)), buffers))
    else:
        raw = minimum * rng.lognormal(float(rng.uniform(0.5, 3.0)), float(rng.uniform(0.5, 2.0)), buffers)
    raw = np.minimum(raw, float(minimum) * 2**20)
    sizes = (np.ceil(raw / quantum) * quantum).astype(np.int64)
    return columns_trace(starts, starts + lifetimes, sizes, np.full(buffers, quantum, dtype=np.int64))


class _Nest:
    """One loop nest of ``equal_sizes``: its streams of tiles, drawn from the trace's sizes."""

    def __init__(self, rng: np.random.Generator, sizes: list[int]):
        self.iterations = int(rng.integers(50, 2001))
        count = int(rng.integers(2, 9))
        self.sizes = [sizes[int(rng.integers(len(sizes)))] for _ in range(count)]
        self.periods = [int(rng.integers(1, 5)) for _ in range(count)]
        self.depths = [int(rng.integers(2, 5)) for _ in range(count)]
        self.accumulators = [sizes[int(rng.integers(len(sizes)))] for _ in range(int(rng.integers(0, 4)))]


def equal_sizes(buffers: int, seed: int = 0) -> Trace:
    """Many buffers of a few equal sizes: multi-buffered tiles (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 10])
    sizes = sorted({round_size(log_uniform(rng, 4 * KIB, 16 * MIB)) for _ in range(int(rng.integers(1, 5)))})
    alignment = int(rng.choice((64, 256)))
    out = TraceBuilder(buffers)
    handed: list[tuple[int, int]] = []  # (buffer, nests left to live through)
    t = 0
    while not out.full():
        nest = _Nest(rng, sizes)
        began = t
        for size in nest.accumulators:
            out.add(t, t + nest.iterations + 1, size, alignment)
        for iteration in range(nest.iterations):
            if out.full():
                break
            for size, period, depth in zip(nest.sizes, nest.periods, nest.depths):
                if iteration % period == 0:
                    out.add(t, t + depth * period, size, alignment)
            t += 1
        kept = []
        for index, nests in handed:
            out.extend(index, t + 1)
            if nests > 1:
                kept.append((index, nests - 1))
        handed = kept
        for _ in range(int(rng.integers(0, 3))):  # results read by the next nest or the one after
            index = out.add(began + int(rng.integers(0, max(1, t - began))), t + 1, sizes[int(rng.integers(len(sizes)))], alignment)
            if index >= 0:
                handed.append((index, int(rng.integers(1, 3))))
        t += 1
    return out.trace(rng)


def huge_and_tiny(buffers: int, seed: int = 0) -> Trace:
    """A few huge buffers among many tiny short-lived ones (see the module docstring)."""
    check_count(buffers)
    rng = np.random.default_rng([seed, 11])
    huge = min(buffers, max(2, int(round(buffers * log_uniform(rng, 1e-4, 2e-3)))))
    tiny = buffers - huge
    rate = log_uniform(rng, 1.0, 20.0)
    tiny_starts = _poisson_starts(rng, tiny, rate)
    tiny_ends = tiny_starts + _lognormal_lifetimes(rng, tiny, log_uniform(rng, 2.0, 200.0), float(rng.uniform(0.5, 1.5)))
    typical = log_uniform(rng, 64.0, 1024.0)
    tiny_sizes = np.clip(np.round(rng.lognormal(np.log(typical), 1.0, tiny)), 8, 64 * KIB).astype(np.int64)
    tiny_alignments = rng.choice(np.array([1, 4, 8, 16], dtype=np.int64), tiny)
    horizon = int(tiny_ends.max(initial=1))
    spans = np.maximum(1, (horizon * np.exp(rng.uniform(np.log(0.01), np.log(0.5), huge))).astype(np.int64))
    huge_starts = (rng.random(huge) * np.maximum(1, horizon - spans)).astype(np.int64)
    huge_sizes = (np.exp(rng.uniform(np.log(16 * MIB), np.log(GIB), huge)) // (4 * KIB) * (4 * KIB)).astype(np.int64)
    # the huge buffers at random places in the id order, as a trace lists them when allocated
    order = np.argsort(np.concatenate([tiny_starts, huge_starts]), kind="stable")
    starts = np.concatenate([tiny_starts, huge_starts])[order]
    ends = np.concatenate([tiny_ends, huge_starts + spans])[order]
    sizes = np.concatenate([tiny_sizes, huge_sizes])[order]
    alignments = np.concatenate([tiny_alignments, np.full(huge, 4 * KIB, dtype=np.int64)])[order]
    return columns_trace(starts, ends, sizes, alignments)
