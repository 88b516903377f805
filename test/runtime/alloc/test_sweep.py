"""The validator's C sweep against a brute-force check of every pair."""

import random

import numpy as np
import pytest

from telamalloc.runtime.alloc._sweep import disjoint_by_rank


def events_of(buffers):
    """Sweep-ordered (lows, highs, starting) of (start, end, low, high) buffers."""
    rows = []
    for index, (start, end, low, high) in enumerate(buffers):
        rows.append((start, 1, index, low, high))
        rows.append((end, 0, index, low, high))
    rows.sort(key=lambda row: (row[0], row[1], row[2]))  # ends before starts at one time
    lows = np.array([row[3] for row in rows], dtype=np.int64)
    highs = np.array([row[4] for row in rows], dtype=np.int64)
    starting = np.array([row[1] for row in rows], dtype=np.uint8)
    return lows, highs, starting


def brute_force(buffers) -> bool:
    for i, (s1, e1, l1, h1) in enumerate(buffers):
        for s2, e2, l2, h2 in buffers[i + 1:]:
            if s1 < e2 and s2 < e1 and l1 < h2 and l2 < h1:
                return False
    return True


def random_buffers(seed: int, most: int, lowest: int, longest: int) -> list[tuple[int, int, int, int]]:
    """Up to ``most`` random (start, end, low, high) buffers with lows below ``lowest``."""
    rng = random.Random(seed)
    buffers = []
    for _ in range(rng.randint(0, most)):
        start = rng.randint(0, 12)
        low = rng.randint(0, lowest)
        buffers.append((start, start + rng.randint(1, 6), low, low + rng.randint(1, longest)))
    return buffers


def by_rank(lows, highs, starting):
    """disjoint_by_rank's arguments for the same events."""
    ranked, ranks = np.unique(lows, return_inverse=True)
    return np.ascontiguousarray(ranks, dtype=np.int64), np.ascontiguousarray(ranked, dtype=np.int64), highs, starting


@pytest.mark.parametrize("seed", range(300))
def test_agrees_with_every_pair(seed):
    buffers = random_buffers(seed, 25, 40, 9)
    assert disjoint_by_rank(*by_rank(*events_of(buffers))) == brute_force(buffers)


def test_touching_in_time_or_bytes_is_allowed():
    assert disjoint_by_rank(*by_rank(*events_of([(0, 3, 0, 8), (3, 5, 0, 8), (0, 5, 8, 16)])))
    assert not disjoint_by_rank(*by_rank(*events_of([(0, 3, 0, 8), (2, 5, 7, 16)])))


def test_an_end_without_its_start_is_not_a_sweep():
    lows, highs, starting = (np.array([4], dtype=np.int64), np.array([8], dtype=np.int64), np.array([0], dtype=np.uint8))
    assert not disjoint_by_rank(*by_rank(lows, highs, starting))


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="same length"):
        disjoint_by_rank(np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.uint8))


@pytest.mark.parametrize("seed", range(300))
def test_by_rank_agrees_with_every_pair(seed):
    # odd seeds: few ranks (shared lows); even ones: many
    buffers = random_buffers(seed, 40, 40, 9) if seed % 2 else random_buffers(seed, 40, 3000, 200)
    assert disjoint_by_rank(*by_rank(*events_of(buffers))) == brute_force(buffers)


@pytest.mark.parametrize("count", [1, 63, 64, 65, 4095, 4096, 4097, 300_000])
def test_by_rank_across_the_summary_levels(count):
    # disjoint ranges [2i, 2i+1) all live, then one more over each neighbour pair in turn
    # (at ranks next to the word and level boundaries of the bit set)
    lows = np.arange(count, dtype=np.int64) * 2
    buffers = [(0, 10, int(low), int(low) + 1) for low in lows]
    assert disjoint_by_rank(*by_rank(*events_of(buffers))) if count < 5000 else True
    starts = np.zeros(count, dtype=np.int64)
    for probe in sorted({0, 1, 62, 63, 64, 65, count // 2, count - 2, count - 1} & set(range(count))):
        # a range from the middle of buffer `probe` to the middle of the next gap: collides with it only
        extra_low = int(lows[probe])
        all_lows = np.append(lows, extra_low)
        all_highs = np.append(lows + 1, extra_low + 2)
        order = np.argsort(np.append(starts, 1), kind="stable")  # starts only; the extra one last
        ranked, ranks = np.unique(all_lows, return_inverse=True)
        args = (np.ascontiguousarray(ranks[order], dtype=np.int64), ranked.astype(np.int64),
                np.ascontiguousarray(all_highs[order]), np.ones(count + 1, dtype=np.uint8))
        assert not disjoint_by_rank(*args)
        # shifted into the gap above it: collides with nothing
        gap = all_lows.copy()
        gap[-1] = extra_low + 1
        ranked, ranks = np.unique(gap, return_inverse=True)
        args = (np.ascontiguousarray(ranks[order], dtype=np.int64), ranked.astype(np.int64),
                np.ascontiguousarray(np.append(lows + 1, extra_low + 2)[order]), np.ones(count + 1, dtype=np.uint8))
        assert disjoint_by_rank(*args)
        # reaching into the next buffer: collides with its successor
        if probe + 1 < count:
            args = (args[0], args[1], np.ascontiguousarray(np.append(lows + 1, extra_low + 3)[order]), args[3])
            assert not disjoint_by_rank(*args)
