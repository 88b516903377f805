"""The validator's C sweep against a brute-force check of every pair."""

import random

import numpy as np
import pytest

from telamalloc.runtime.alloc._sweep import disjoint_while_live


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


@pytest.mark.parametrize("seed", range(300))
def test_agrees_with_every_pair(seed):
    rng = random.Random(seed)
    buffers = []
    for _ in range(rng.randint(0, 25)):
        start = rng.randint(0, 12)
        low = rng.randint(0, 40)
        buffers.append((start, start + rng.randint(1, 6), low, low + rng.randint(1, 9)))
    assert disjoint_while_live(*events_of(buffers)) == brute_force(buffers)


def test_touching_in_time_or_bytes_is_allowed():
    assert disjoint_while_live(*events_of([(0, 3, 0, 8), (3, 5, 0, 8), (0, 5, 8, 16)]))
    assert not disjoint_while_live(*events_of([(0, 3, 0, 8), (2, 5, 7, 16)]))


def test_an_end_without_its_start_is_not_a_sweep():
    lows, highs, starting = (np.array([4], dtype=np.int64), np.array([8], dtype=np.int64), np.array([0], dtype=np.uint8))
    assert not disjoint_while_live(lows, highs, starting)


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="same length"):
        disjoint_while_live(np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(2, dtype=np.uint8))
