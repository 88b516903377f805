"""The Python API: ``solve(problem, ...) -> Solution``.

Data flows one way: check the problem (user errors raise ``ProblemError``), drop zero-size
buffers, prove the easy infeasibilities (pins, LOAD), run the chosen algorithm, check every
layout claimed valid with the independent validator, and summarize.

Algorithms
- ``telamalloc``: the exact search kernel (``runtime/alloc/exact/_search.pyx``), in fit mode after a
  cheap portfolio step: when best-fit or first-fit already fits, no search runs
  (``greedy_first``; minimize mode starts from the greedy peak anyway). Its OK answers are
  re-checked by ``validate``; its INFEASIBLE answers are proofs, explained by a small core
  of buffers that cannot fit together; on TIMEOUT the better greedy layout is attached.
- ``best-fit`` / ``first-fit``: the greedy baselines (``runtime/alloc/_greedy.pyx``). Greedy proves
  nothing: when its layout exceeds the capacity the status is TIMEOUT (not INFEASIBLE),
  with the greedy layout attached as a fallback. INFEASIBLE comes only from the proofs that
  need no search: LOAD above the capacity, or pins that conflict.
- ``large``: the large-problem planner (``runtime/alloc/large/_large.pyx``): best-fit and first-fit
  placement over a portfolio of orderings (a sweep of the long-lived buffers and a
  contention one with best-fit first, then the classic decreasing-size first-fit and
  best-fit ones, so that without a short time limit
  it is never worse than either greedy baseline), without
  storing overlapping pairs; buffers live at every point are lifted: stacked at the
  bottom first (the two greedy orderings run without that, on the user's pins); in minimize mode then gravity rounds and a large-neighbourhood search
  with the exact kernel on windows around the peak (``_large_layout``, ``_improved``); under
  a time limit, up to LARGE_LANE_BUFFERS buffers and with two cores, a second lane (a
  thread with its own planner) runs other orderings beside the first once its first
  ordering misses LOAD (``_SecondLane``). A
  time limit shorter than the first ordering cuts it short: the rest go into size-class
  slots on top (``_large._slot_rest``, 1.3-2 x LOAD). Like
  greedy it proves nothing: fit mode answers OK when its peak fits, else TIMEOUT with its
  layout as the fallback. Minimize mode with algorithm ``telamalloc`` switches to it by
  itself above LARGE_THRESHOLD buffers, where the exact search is hopeless.

Modes
- fit: any layout with ``peak <= capacity``.
- minimize: the smallest peak. Lower bound: LOAD (or the highest pinned top); upper bound:
  the best greedy peak (and the capacity, when given). The search first tries LOAD, where
  most instances pack, then bisects with fit steps; every INFEASIBLE raises the lower bound,
  every OK lowers the upper bound. ``optimal`` is True when the bounds meet. The schedule is
  driven by work budgets, not by the clock (see "The exact path" below): after a step runs
  out of work the next tries a capacity closer to the best peak, and once every capacity
  up to it has, the budgets grow and it starts again from the lower bound. A time limit,
  the cancel flag or ``Params.node_limit`` only cut that schedule short, so a longer limit
  never gives a worse peak and no limit is never worse than any; the best layout so far is
  returned (status OK, ``optimal`` False) with the proved ``lower_bound``, and both are
  published in ``progress`` as they improve. Anytime: the upper bound starts from the better
  of greedy and the ``large`` portfolio, every improvement is published in ``progress[2]``,
  and with algorithm ``large`` (or above LARGE_THRESHOLD buffers) a time limit is spent on
  further orderings, the best layout so far being returned at the limit.

The exact path (algorithm ``telamalloc`` below LARGE_THRESHOLD buffers)
- Groups: the buffers split at the time points no lifetime crosses (the kernel's static
  decomposition); the peak is the highest group peak, so each group is fitted on its own and,
  with ``Params.group_memory``, remembers across the fit steps of minimize its best layout
  (it fits every larger capacity) and the highest capacity proved too small (every smaller
  one is too). A group whose greedy layout already fits is not searched.
- Races (``_race``): each fit step of a group runs the kernel with a node budget and, when
  the kernel does not answer within CPSAT_DELAY_SECONDS or runs out of nodes, OR-Tools
  CP-SAT (``runtime/alloc/exact/cpsat.py``, with ``Params.cpsat`` and OR-Tools installed, groups up
  to CPSAT_MAX_BUFFERS) with a deterministic work budget, in another thread (both release
  the GIL). Proofs of infeasibility come from either, first one wins; the layout is the
  kernel's whenever the kernel finds one within its budget, else CP-SAT's: so without a time
  limit the output depends on the budgets, never on thread timing (byte-identical runs).
- The CP-SAT member of minimize (``_cpsat_minimize``): at the start of each round of budgets
  CP-SAT fits the groups that set the best peak one byte below it, beside the first attempt
  of the round, and is waited for after it; a better layout or the proof of optimality goes
  into the groups.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
import os
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from telamalloc.runtime.alloc import _greedy
from telamalloc.runtime.alloc.exact import cpsat
from telamalloc.runtime.alloc.problem import (
    INT64_MAX,
    Mode,
    Overload,
    Params,
    Problem,
    ProblemError,
    Solution,
    Stats,
    Status,
    columns_of,
)
from telamalloc.runtime.alloc.validate import compute_load, validate

INT64_MIN = -(2**63)
ALGORITHMS = ("telamalloc", "best-fit", "first-fit", "large")
GREEDY_ALGORITHMS = ("best-fit", "first-fit")
# Above this many buffers (of positive size) minimize mode with algorithm "telamalloc" uses
# the large planner alone: the exact search proves G_1 (816 buffers) and resnet50 (1042) at
# LOAD in a tenth of a second but times out on the 18692..62185-buffer problems of
# ../shared/benchmarks/large, where "large" reaches 1.000-1.008 x LOAD in seconds.
LARGE_THRESHOLD = 4096
# Buffer placements the large planner spends without a time limit (see _large_orderings):
# one ordering costs ~0.1-0.8 s at 10^5 buffers and ~1.5-8 s at 10^6 on this machine, so
# 10^5 buffers get 4 (LARGE_MIN_ORDERINGS), 62185 (Y_1) 5; up to 16842 buffers all
# nineteen fixed ones.
LARGE_PLACEMENTS = 320_000
# ... but at least this many (a sweep and a contention one, first-fit and best-fit: never
# worse than the greedy baselines), also at 10^6 buffers.
LARGE_MIN_ORDERINGS = 4
# Under a time limit the large-neighbourhood search runs after each improving ordering from
# this step on (before it: the first orderings back to back). Measured: pangu's LNS windows on
# the contention layout (1.0889 x LOAD) took the whole 2 s, first-fit (1.0334) never ran.
# Above LARGE_EAGER_BUFFERS buffers from the first ordering on: one ordering takes seconds
# there, a second one may not fit the limit (unet at 10^6: 1.1619 x LOAD without the search).
LARGE_EAGER_STEP = 2
LARGE_EAGER_BUFFERS = 200_000
# Under a time limit, up to LARGE_LANE_BUFFERS buffers and with a second core, a second lane
# (a thread with its own planner) runs the orderings of LARGE_SECOND_LANE with their own
# gravity rounds and search beside the first lane's schedule (which skips them); at most
# LARGE_LANES lanes (1: never). Simulated with two processes (tela-alloc's schedule, and
# one starting with these), deepnet at 10^5 buffers under a 1.6 s limit: seeds 0, 2, 5, 6
# 1.0069, 1.0146, 1.0102, 1.0049 x LOAD against 1.0072, 1.0178, 1.0114, 1.0096 for the
# first alone (seeds 1 and 4 the same); above 200,000 buffers one ordering fills the limit.
# Built (the second lane starting once the first lane's first ordering misses LOAD, so
# unet and training, at LOAD at once, do not pay for it): tela-alloc --timeout=2s on seeds
# 0..7 1.0069, 1.0095, 1.0132, 1.0040, 1.0048, 1.0102, 1.0049, 1.0027 against 1.0072,
# 1.0095, 1.0178, 1.0040, 1.0048, 1.0114, 1.0095, 1.0027 with one lane; 180-190 MB against
# 115-131 MB.
LARGE_LANES = 2
LARGE_LANE_BUFFERS = LARGE_EAGER_BUFFERS
LARGE_SECOND_LANE = (15, 11, 16)
# Above LARGE_LANE_BUFFERS buffers a second lane starting with the first, running the
# sweep with a medium tier (17) beside the plain sweep, gave deepnet at 10^6 (tela-alloc
# --timeout=10s, seeds 0..4) 1.0029, 1.0030, 1.0050, 1.0037, 1.0016 x LOAD against 1.0035,
# 1.0041, 1.0057, 1.0035, 1.0016 with one lane on a quiet machine, but beside two busy
# loops on the 2 cores neither lane's ordering finished within the limit: 1.0794 x LOAD
# in 11.6 s for a 9 s limit (in-process), against 1.0050 in 10.3 s with one lane. At the
# lowest CPU priority (nice 19 for its thread) it held the GIL while starved: 1.0040 in
# 38.6 s. Not adopted then; LARGE_HUGE_LANE below is that lane with a governor.
# Above LARGE_HUGE_BUFFERS buffers, where the first lane would run LARGE_HUGE_SCHEDULE's
# first two orderings one after the other and the limit often cuts the second one's round
# short, a second lane starts with the first and runs LARGE_HUGE_LANE's orderings with their window
# search, re-placements and rounds (the huge branch of _large_lane), which the first lane
# then skips; then each lane improves its own layout. A governor (_SecondLane.govern) reads
# both lanes' CPU time every LANE_GOVERN_SECONDS while their first orderings run and drops
# the second lane (halted, its orderings given back to the first lane) when either lane got
# less than LANE_GOVERN_SHARE of a core LANE_GOVERN_TIMES times in a row: on a busy machine
# two lanes would cut the first ordering short. Measured, tela-alloc --timeout=10s, deepnet
# at 10^6, see README ("Since stop 35").
LARGE_HUGE_LANE = (16,)
LANE_GOVERN_SECONDS = 0.25
LANE_GOVERN_SHARE = 0.75
LANE_GOVERN_TIMES = 2
# Under a time limit the large planner stops this long per buffer before it, so that the
# validator and the Solution (its offsets and ids) finish within the limit: measured ~0.6 us
# per buffer at 10^6 on a busy 2-core machine since the validator's sweep is O(e log n)
# (it was ~1.5 us with the array shifts), doubled for safety.
LARGE_CHECK_SECONDS_PER_BUFFER = 1.2e-6
# Large-neighbourhood search after the orderings (see _lns): at most LARGE_LNS_ROUNDS exact
# window searches and LNS_PATIENCE_NODES_PER_BUFFER x buffers (at most LNS_PATIENCE_NODES)
# kernel nodes spent in searches that ran out of nodes; windows of at most
# LNS_EXACT_BUFFERS free buffers, LNS_WINDOW_NODES kernel nodes for the first search of a
# window, twice that for each of the LNS_GROWTH doublings; LNS_BISECTIONS capacities proved
# infeasible per window; done within LNS_CLOSE of the lower bound. Every budget counts
# nodes, not seconds, so the result without a time limit is the same on every machine.
LARGE_LNS_ROUNDS = 200
# Gravity rounds (_large._Planner.settle): LARGE_GRAVITY_FIRST on the best layout, then the
# large-neighbourhood search, then the other rounds, LARGE_GRAVITY_ROUNDS in all (see
# _improved); the first ordering's (the sweep's) layout gets its first rounds at once,
# before the next ordering is compared with it. Above LARGE_EAGER_BUFFERS
# the search comes first and the rounds move the top of the layout only (1-1.6 s a round
# on deepnet at 10^6, where moving most buffers took ~7 s: _large.GRAVITY_SHARES_HIGH).
# Measured on deepnet at
# 10^5 buffers, seeds 0, 1, 2, two rounds: on the contention layout 1.0111 -> 1.0093,
# 1.0476 -> 1.0299, 1.0299 -> 1.0219 x LOAD, on first-fit's 1.0337 -> 1.0336, 1.0409 ->
# 1.0391, 1.0461 -> 1.0413 (a first-fit layout is nearly settled already; it is seed 1's
# best unsettled layout, so settling only the best left 1.0391). The window search lowers
# none of them, and before the rounds it took most of a 2 s limit on its infeasible
# windows; with six rounds before the search, tracegen's had no time left (1.0162 instead
# of LOAD); settling every best-fit ordering's layout cost S_1 1.0000 -> 1.0017.
LARGE_GRAVITY_FIRST = 2
LARGE_GRAVITY_ROUNDS = 6
LNS_EXACT_BUFFERS = 3000
# ... and at most this many buffers in a window, pins included, or one LNS_WINDOW_SHARE-th
# of the buffers when that is more: the kernel's set-up alone took 1.5 s on a 2587-buffer
# window of S_1 (62k buffers, one free buffer); the windows that lowered a peak on the trace
# families held 250..600 at 10^5 buffers; tracegen at 10^6 needs one of 1024..2048 buffers
# (1.0177 -> 1.0000 x LOAD).
LNS_WINDOW_BUFFERS = 1024
LNS_WINDOW_SHARE = 400
LNS_WINDOW_NODES = 2048
LNS_GROWTH = 5
LNS_BISECTIONS = 3
LNS_PATIENCE_NODES = 65536
LNS_PATIENCE_NODES_PER_BUFFER = 0.5
# ... and at most LNS_WORK_PER_BUFFER x buffers of work in all, a search's work being its
# nodes times the buffers the kernel gets (pins included, merged: a node costs about that). Measured
# at 10^5 buffers: tracegen's two improving windows take 6e6, transformer's 2e6; on
# deepnet's contention layout every window around the peak is infeasible or runs out of
# nodes (4.5e7 of work, 8 s, before this budget).
LNS_WORK_PER_BUFFER = 100
LNS_CLOSE = 1e-6
# A window search that runs out of nodes below the peak does not say whether a lower layout
# exists: the next search of the window then asks for less (halfway from that capacity to
# just under the peak) before the window grows; False: the window grows at once. And each
# growth k >= 1 also widens the window until no movable buffer crossing its ends has a top
# at or above (1 - k x LNS_LEVEL_STEP) x the peak (0: only the buffers at the peak count),
# when the window stays within the limits above (else the doubled window alone): pinned
# buffers high in the layout split the free space, and the ends where the crossing
# buffers are low leave it whole. Measured on tracegen (nested lifetimes around its LOAD
# point) at 10^5 buffers, seeds 0..7, in-process 1.6 s: seeds 2, 3 and 7 1.0230, 1.0258,
# 1.0384 -> 1.0041, 1.0008, 1.0017 x LOAD (the others at LOAD both ways); a window of
# 193 free buffers the old rule never reached found a layout at 1.01 in 4,407 nodes where
# the windows it tried (74 and 163 free, crossing buffers topping at 0.90-0.95 x LOAD) ran
# out of 16,384-32,768 nodes. Either rule alone: seeds 2, 3, 7 at 1.0230, 1.0008, 1.0384
# (looser only) or 1.0354, 1.0000, 1.0017 (levels only: their wide windows ran out of
# nodes at LOAD and kept the time); steps of 0.5 or 0.125: 1.0000, 1.0055, 1.0065 or
# 1.0036, 1.0055, 1.0384. deepnet seeds 0..7, transformer seeds 0, 2, 5, unet, training,
# S_1, Y_1 and pangu: the same peaks.
LNS_LOOSER = True
LNS_LEVEL_STEP = 0.25
# The kernel gets a window's pins merged (_window): those covering the freed buffers' whole
# span become one pin per run of touching byte ranges. It takes every pin as a node of its
# search, and under deepnet's long-lived buffers most of a window's 450-500 members are such
# pins: 10x fewer nodes and seconds per search (deepnet at 10^5, seed 5: 1,690 nodes and
# 0.024 s -> 115 and 0.002 s), so the node, work and time budgets reach further. Measured
# in-process, 1.6 s, 10^5 buffers, seeds 0..7: deepnet 1.0069, 1.0095, 1.0146, 1.0040,
# 1.0048, 1.0102, 1.0049, 1.0027 -> 1.0069, 1.0095, 1.0131, 1.0038, 1.0048, 1.0102,
# 1.0041, 1.0009 x LOAD; tracegen seeds 2 and 3 1.0041, 1.0008 -> LOAD (the others at LOAD
# both ways); transformer, unet, training, idealloc's set, deepnet, tracegen and
# transformer at 10^6: the same peaks. False: the crossing buffers themselves.
LNS_MERGE_PINS = True
# Window re-placement (_rewindows): windows around the highest buffer's start holding these
# many starts (the first that lowers it is taken), re-placed with these orderings (the
# sweep with a medium tier, first-fit, contention by later end, two seeded random ones),
# at most REWINDOW_ROUNDS windows taken and REWINDOW_WORK_PER_BUFFER x buffers of work
# (buffers placed, pins included) in all. Which ones lowered deepnet's peaks at 10^6
# (seeds 0..9, a prototype taking the lowest of eight orderings: 0, 1, 11, 13, 14, 17, 21,
# 22): first-fit 12 of 31 windows, the sweep 5, 13 4, the random ones 4 and 2, the others
# none; windows of 256, 1,024, 4,096 and 16,384 starts 11, 7, 6 and 2 (fixed widths of
# 100..3,000 points instead gave the same peaks). The work at 10^6 under a 10 s limit:
# 0.4-0.6 per buffer; at 10^5 without a limit 1.2-2.
REWINDOW_BUFFERS = (256, 1024, 4096, 16384)
REWINDOW_ORDERINGS = (17, 1, 13, 21, 22)
REWINDOW_ROUNDS = 200
REWINDOW_WORK_PER_BUFFER = 20
# ... and when none of those windows lowers the highest buffer, windows of
# REWINDOW_HOLDING_BUFFERS starts around the lifetime of the buffer below it (see
# _rewindows). Deepnet at 10^6 seed 0 (its peak on a buffer living 8,592 points), one
# pass in-process from the layout before the re-placements (1.0029): 1.0021 against
# 1.0026 without (256, 1,024, 4,096 and 16,384 starts around the lifetime: the same in
# 1.3x the work; 8,192 alone 1.0024).
REWINDOW_HOLDING = True
REWINDOW_HOLDING_BUFFERS = (16384,)
# The planner gets a window's pins merged as the exact kernel does (_window): cut to the
# freed buffers' span, those covering all of it one pin per run of touching byte ranges.
# Under deepnet's long-lived buffers a window of 256 starts holds 3,256 buffers, ~3,000
# of them crossing it. Deepnet at 10^6, one pass in-process from the layouts before the
# re-placements, seeds 0..3: the same peaks but seed 2's 1.0042 (1.0044 unmerged) in
# 0.6-0.7x the time (0.24-0.64 s; with the windows around the buffer below 0.35-1.31 s
# against 0.55-1.59). That made room for those windows right after the first two
# orderings above LARGE_HUGE_BUFFERS: tela-alloc --timeout=10s, seeds 0..9, twice:
# median 1.0021 (seed 0 1.0017) against 1.0026 without them; unmerged, they cost
# ordering 18 the limit on five of seeds 0..14 (median 1.0027).
REWINDOW_MERGE_PINS = True
# When a lane's first ordering is one of LARGE_RESWEPT (sweep orderings; up to
# LARGE_EAGER_BUFFERS buffers), after its first gravity rounds, the sweep runs again with
# the buffers living at least 1/LARGE_RESWEEP_DIVISOR of the span that are live at its
# layout's highest point swept with the long-lived ones, up to LARGE_RESWEEPS times (see
# _resweeps; 0: never): without a limit at once, under one only if the sweep's layout is
# still the best when the search becomes due (after the eager orderings). tela-alloc
# --timeout=2s on deepnet at 10^5, seeds 0..7: 1.0069, 1.0095, 1.0081, 1.0038, 1.0020,
# 1.0102, 1.0041, 1.0005 x LOAD against 1.0069, 1.0095, 1.0131, 1.0038, 1.0048, 1.0102,
# 1.0048, 1.0027 without (seeds 6, 7: medians of 5; both with the sweep's bounded gap
# scan, see _large.SWEEP_EVERY_GAP_BUFFERS for the figures since); the other families and
# idealloc's set the same. At 10^6 (off there) a re-sweep gave 1.0044 from the LOAD point's
# buffers and 1.0093 from the highest point's against the sweep's 1.0035, three rounds
# each (deepnet seed 0, without a limit). Re-swept at once under a limit too: seed 1
# 1.0161 in some runs (contention by later end, #13, wins there and got 0.4 s less for its
# search). Deferred without a limit
# too: a later ordering beating the sweep's layout but not the re-swept one cancelled the
# re-sweep (tracegen 6000, seed 5: three orderings 2.7% above one). The second lane's
# sweep (15) re-swept too: 1.0071 on seed 6; at 10^6 it cost the second gravity round
# (1.0108 and 1.0065 against 1.0046 and 1.0047).
LARGE_RESWEEPS = 1
LARGE_RESWEEP_DIVISOR = 256
LARGE_RESWEPT = (14,)

# The core search (deletion filter) gets at most this many seconds, and at most this
# fraction of the time left under a time limit.
CORE_BUDGET_SECONDS = 2.0
CORE_BUDGET_FRACTION = 0.2
# The exact path spends work budgets, not seconds, so that its answers do not depend on the
# machine or on the time limit (which only cuts the schedule short; see _minimize). Step k
# of a fit races the kernel with KERNEL_FIRST_NODES * STEP_GROWTH**k nodes against CP-SAT
# with CPSAT_FIRST_WORK * STEP_GROWTH**k deterministic work units (about a second each),
# CP-SAT joining after CPSAT_DELAY_SECONDS (see _race). 50k nodes: D of the challenging set
# needs 30k (a restart would waste them); small groups run ~10^6 nodes/s.
KERNEL_FIRST_NODES = 50_000
CPSAT_FIRST_WORK = 0.25
STEP_GROWTH = 4
# minimize: after each new best peak, try one byte below it next (see _minimize). Measured:
# the 17-buffer case of issue 16 is proved optimal in 0.1 s with it, 0.5 s without; one
# 5 s run on bench/hard --mode minimize left H.0.0 at 948224 with it, 913408 without
MINIMIZE_PROBE = True
CPSAT_DELAY_SECONDS = 0.02  # small: only groups up to CPSAT_MAX_BUFFERS race at all
# Groups above this many buffers go to the kernel alone. Measured on this (shared, busy)
# 2-core machine: on groups of 30-84 buffers (bench/hard) CP-SAT settles in 0.04-1 s what the
# kernel may not in 10 s; from 154 buffers on (the challenging set, +512 bytes) it answered
# nothing in its budgets and its thread slowed the kernel: A+512 went from 16 s to > 40 s
# (densenet121's 2595-buffer group: 8 s for 0.25 work units, no answer).
CPSAT_MAX_BUFFERS = 128
# The deletion filter of _core checks each candidate set with one step of this number.
CORE_STEP = 0


def _is_int(value: object) -> bool:
    if type(value) is int:  # the common case, checked first: this runs per field per buffer
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy ints too


def _check_problem(problem: Problem) -> None:
    """Raise ProblemError for anything the kernels cannot take as stated."""
    if not isinstance(problem, Problem):
        raise ProblemError(f"expected a Problem, got '{type(problem).__name__}'")
    seen: set[Hashable] = set()
    stacked = 0
    highest_pin = 0
    for buffer in problem.buffers:
        try:
            duplicate = buffer.id in seen
            seen.add(buffer.id)
        except TypeError:
            raise ProblemError(f"buffer '{buffer.id}' has an unhashable id; use a string or an integer") from None
        if duplicate:
            raise ProblemError(f"buffer '{buffer.id}' appears twice; give every buffer a unique id")
        if not (_is_int(buffer.start) and _is_int(buffer.end) and _is_int(buffer.size) and _is_int(buffer.alignment)):
            for field_name in ("start", "end", "size", "alignment"):
                value = getattr(buffer, field_name)
                if not _is_int(value):
                    raise ProblemError(f"buffer '{buffer.id}' has {field_name} '{value!r}'; expected an integer")
        if buffer.offset is not None and not _is_int(buffer.offset):
            raise ProblemError(f"buffer '{buffer.id}' has offset '{buffer.offset!r}'; expected an integer or None")
        start, end, size, alignment = int(buffer.start), int(buffer.end), int(buffer.size), int(buffer.alignment)
        if start < INT64_MIN or end > INT64_MAX:
            raise ProblemError(f"buffer '{buffer.id}' has lifetime [{start}, {end}) beyond 64-bit program points")
        if end <= start:
            raise ProblemError(f"buffer '{buffer.id}' has end '{end}' <= start '{start}'; lifetimes are half-open [start, end)")
        if end - start > INT64_MAX:
            raise ProblemError(f"buffer '{buffer.id}' lives '{end - start}' program points, beyond the 64-bit limit")
        if size < 0:
            raise ProblemError(f"buffer '{buffer.id}' has negative size '{size}'")
        if alignment < 1 or alignment & (alignment - 1) or alignment > 2**62:
            raise ProblemError(f"buffer '{buffer.id}' has alignment '{alignment}'; expected a power of two up to 2^62")
        if buffer.offset is not None:
            offset = int(buffer.offset)
            if offset < 0:
                raise ProblemError(f"buffer '{buffer.id}' is pinned at negative offset '{offset}'")
            if offset + size > INT64_MAX:
                raise ProblemError(f"buffer '{buffer.id}' pinned at '{offset}' ends beyond the 64-bit limit '{INT64_MAX}'")
            highest_pin = max(highest_pin, offset + size)
        stacked += size + alignment - 1
    if stacked + highest_pin > INT64_MAX:
        raise ProblemError(
            f"the buffers need up to '{stacked + highest_pin}' bytes stacked, beyond the 64-bit "
            f"limit '{INT64_MAX}'; use larger units (e.g. KiB) for the sizes"
        )


def _fast_columns(problem: Problem) -> dict[str, np.ndarray] | None:
    """The kernel columns of a problem that passes every check of _check_problem, computed
    with numpy; None when anything is unusual (non-int fields, values near the 64-bit
    limits, duplicate or unhashable ids, a violation), so that _check_problem decides and
    words the error. 10^6 buffers: ~0.5 s instead of ~2 s."""
    from telamalloc.runtime.alloc.validate import _problem_columns  # a columnar problem's columns, or the validator's cache

    cached = _problem_columns(problem)
    if cached is not None:
        arrays = {"starts": cached["starts"], "ends": cached["ends"], "sizes": cached["sizes"], "aligns": cached["aligns"], "fixed": cached["pins"]}
        return _checked_columns(arrays)
    buffers = problem.buffers
    try:
        if len({b.id for b in buffers}) != len(buffers):
            return None
    except TypeError:
        return None
    columns = {
        "starts": [b.start for b in buffers],
        "ends": [b.end for b in buffers],
        "sizes": [b.size for b in buffers],
        "aligns": [b.alignment for b in buffers],
    }
    pins = [b.offset for b in buffers]
    for values in columns.values():
        if values and set(map(type, values)) != {int}:
            return None
    if not set(map(type, pins)) <= {int, type(None)}:
        return None
    if any(pin < 0 for pin in pins if pin is not None):
        return None
    try:
        arrays = {name: np.array(values, dtype=np.int64) for name, values in columns.items()}
        arrays["fixed"] = np.array([-1 if pin is None else pin for pin in pins], dtype=np.int64)
    except OverflowError:
        return None
    return _checked_columns(arrays)


def _checked_columns(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``arrays`` when they pass every check of _check_problem, else None."""
    starts, ends, sizes, aligns, fixed = (arrays[name] for name in ("starts", "ends", "sizes", "aligns", "fixed"))
    if len(starts) == 0:
        return arrays
    quarter = 2**61  # far from the 64-bit limits: no overflow in the sums below
    if starts.min() < -quarter or ends.max() > quarter or sizes.max() > quarter or aligns.max() > 2**62:
        return None
    if np.any(ends <= starts) or np.any(sizes < 0) or np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        return None
    if fixed.max() > quarter:
        return None
    if np.any(fixed < -1):
        return None
    highest_pin = int(np.max(np.where(fixed >= 0, fixed + sizes, 0)))
    # float sums are within a millionth here: exact sums only when it could matter
    if float(sizes.sum(dtype=np.float64)) + float(aligns.sum(dtype=np.float64)) + highest_pin < 2.0**62:
        return arrays
    stacked = sum(sizes.tolist()) + sum(aligns.tolist()) - len(sizes)
    if stacked + highest_pin > INT64_MAX:
        return None
    return arrays


def _check_capacity(capacity: object) -> int | None:
    if capacity is None:
        return None
    if not _is_int(capacity):
        raise ProblemError(f"capacity '{capacity!r}' is not an integer number of bytes")
    if not 0 <= int(capacity) <= INT64_MAX:
        raise ProblemError(f"capacity '{capacity}' must be between '0' and '{INT64_MAX}' bytes")
    return int(capacity)


def _check_mode(mode: str | Mode) -> Mode:
    if isinstance(mode, Mode):
        return mode
    try:
        return Mode(mode)
    except ValueError:
        raise ProblemError(f"unknown mode '{mode}'; use 'fit' or 'minimize'") from None


def _check_progress(progress: object) -> np.ndarray | None:
    if progress is None:
        return None
    if not isinstance(progress, np.ndarray) or progress.dtype != np.int64 or progress.shape not in ((3,), (4,)):
        raise ProblemError("progress must be None or a numpy int64 array of length 3 or 4")
    progress[:] = (0, 0, -1, -1)[: len(progress)]
    return progress


def _publish_best(instance: _Instance, peak: int) -> None:
    if instance.progress is not None:
        instance.progress[2] = peak


def _publish_bounds(instance: _Instance, peak: int, lower: int) -> None:
    """The best peak so far, and (in slot 3, when the array has one) the proved lower bound."""
    _publish_best(instance, peak)
    if instance.progress is not None and len(instance.progress) > 3:
        instance.progress[3] = lower


def _check_cancel(cancel: object) -> np.ndarray | None:
    if cancel is None:
        return None
    if not isinstance(cancel, np.ndarray) or cancel.dtype != np.uint8 or cancel.shape != (1,):
        raise ProblemError("cancel must be None or a numpy uint8 array of length 1")
    return cancel


@dataclass
class _Counters:
    nodes: int = 0
    backtracks: int = 0
    restarts: int = 0
    cancelled: bool = False

    def add(self, result) -> None:
        self.nodes += int(result.nodes)
        self.backtracks += int(result.backtracks)
        self.restarts += int(result.restarts)
        self.cancelled = self.cancelled or bool(result.cancelled)


@dataclass
class _Instance:
    """The buffers with a positive size, as kernel arrays; plus what the solve shares."""

    problem: Problem
    live: np.ndarray  # indices into problem.buffers of the positive-size buffers
    starts: np.ndarray
    ends: np.ndarray
    sizes: np.ndarray
    aligns: np.ndarray
    fixed: np.ndarray
    params: Params
    cancel: np.ndarray | None
    deadline: float | None  # time.monotonic() value, None without a time limit
    counters: _Counters = field(default_factory=_Counters)
    greedy_layouts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # computed once per algorithm
    progress: np.ndarray | None = None  # live [nodes, backtracks, best peak or -1(, lower bound)], see solve()
    groups: list[_Group] | None = None  # the exact path's static groups and what it learned (_groups_of)
    work_used: int = 0  # kernel nodes charged to Params.node_limit (see _race)
    out_of_work: bool = False  # Params.node_limit reached: the exact schedule ends

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def cancelled(self) -> bool:
        return self.cancel is not None and bool(self.cancel[0])

    def full_offsets(self, live_offsets: Sequence[int]) -> tuple[int, ...]:
        """Offsets for every buffer: zero-size buffers keep their pin or take 0."""
        count = self.problem.buffer_count
        if isinstance(live_offsets, np.ndarray) and live_offsets.dtype == np.int64 and len(self.live) == count:
            return tuple(live_offsets.tolist())
        held = columns_of(self.problem)
        if held is not None:
            offsets = np.maximum(held.arrays["pins"], 0)
            offsets[self.live] = np.asarray(live_offsets, dtype=np.int64)
            return tuple(offsets.tolist())
        if len(self.live) == count:  # no zero-size buffer: live is 0..n-1
            return tuple(int(offset) for offset in live_offsets)
        offsets = [b.offset if b.offset is not None else 0 for b in self.problem.buffers]
        for index, offset in zip(self.live.tolist(), list(live_offsets)):
            offsets[index] = int(offset)
        return tuple(offsets)


def _make_instance(problem: Problem, params: Params, cancel, deadline, columns: dict[str, np.ndarray] | None = None) -> _Instance:
    if columns is not None:
        live = np.flatnonzero(columns["sizes"] > 0).astype(np.int64)
        return _Instance(
            problem=problem,
            live=live,
            **{name: np.ascontiguousarray(columns[name][live]) for name in ("starts", "ends", "sizes", "aligns", "fixed")},
            params=params,
            cancel=cancel,
            deadline=deadline,
        )
    live = [i for i, b in enumerate(problem.buffers) if b.size > 0]
    buffers = [problem.buffers[i] for i in live]

    def column(values):
        return np.array(values, dtype=np.int64)

    return _Instance(
        problem=problem,
        live=column(live),
        starts=column([int(b.start) for b in buffers]),
        ends=column([int(b.end) for b in buffers]),
        sizes=column([int(b.size) for b in buffers]),
        aligns=column([int(b.alignment) for b in buffers]),
        fixed=column([-1 if b.offset is None else int(b.offset) for b in buffers]),
        params=params,
        cancel=cancel,
        deadline=deadline,
    )


def _peak(problem: Problem, offsets: Sequence[int]) -> int:
    held = columns_of(problem)
    if held is not None and len(offsets) == held.count:  # offsets within 64 bits: validated layouts are
        if held.count == 0:
            return 0
        return int((np.asarray(offsets, dtype=np.int64) + held.arrays["sizes"]).max())
    return max((offset + b.size for b, offset in zip(problem.buffers, offsets)), default=0)


@dataclass
class _Outcome:
    """What one fit attempt or a whole mode found, before it becomes a Solution."""

    status: Status
    offsets: tuple[int, ...] | None = None
    message: str = ""
    fallback: bool = False
    overload: Overload | None = None
    core: tuple[Hashable, ...] | None = None
    optimal: bool = False
    capacity: int | None = None
    peak: int | None = None  # the peak of offsets when already known (saves a pass at 10^6 buffers)
    lower_bound: int | None = None  # minimize: the highest peak proved necessary


def _pin_conflict(instance: _Instance, capacity: int | None) -> _Outcome | None:
    """INFEASIBLE when pins alone rule out every layout: misaligned, beyond the capacity,
    or two pinned buffers that are live together and share bytes."""
    problem = instance.problem
    if _pins_agree(problem, capacity):
        return None  # decided on the columns of a columnar problem, without building its buffers
    pinned = [i for i, b in enumerate(problem.buffers) if b.offset is not None]
    for index in pinned:
        buffer = problem.buffers[index]
        if buffer.offset % buffer.alignment:
            return _Outcome(
                Status.INFEASIBLE,
                message=f"buffer '{buffer.id}' is pinned at offset '{buffer.offset}', which is not aligned to '{buffer.alignment}'; fix the pin or the alignment",
                core=(buffer.id,),
            )
        if capacity is not None and buffer.offset + buffer.size > capacity:
            return _Outcome(
                Status.INFEASIBLE,
                message=f"buffer '{buffer.id}' is pinned at [{buffer.offset}, {buffer.offset + buffer.size}) beyond capacity '{capacity}'; raise the capacity or move the pin",
                core=(buffer.id,),
            )
    pinned = sorted((i for i in pinned if problem.buffers[i].size > 0), key=lambda i: (problem.buffers[i].start, i))
    for position, first in enumerate(pinned):
        a = problem.buffers[first]
        for second in pinned[position + 1 :]:
            b = problem.buffers[second]
            if b.start >= a.end:
                break
            if a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                ids = tuple(problem.buffers[i].id for i in sorted((first, second)))
                return _Outcome(
                    Status.INFEASIBLE,
                    message=(
                        f"pinned buffers '{a.id}' [{a.offset}, {a.offset + a.size}) and '{b.id}' "
                        f"[{b.offset}, {b.offset + b.size}) are live together at time '{max(a.start, b.start)}' "
                        f"and share bytes; move one of the pins"
                    ),
                    core=ids,
                )
    return None


def _pins_agree(problem: Problem, capacity: int | None) -> bool:
    """True when ``problem`` is columnar and its pins certainly conflict in none of the ways
    _pin_conflict words (False: let it look, on the buffers)."""
    from telamalloc.runtime.alloc.validate import _fast_valid  # the validator's sweep, on the pinned buffers alone

    held = columns_of(problem)
    if held is None:
        return False
    pins, sizes, aligns = held.arrays["pins"], held.arrays["sizes"], held.arrays["aligns"]
    pinned = np.flatnonzero(pins >= 0)
    if len(pinned) == 0:
        return True
    if np.any(pins[pinned] % aligns[pinned]) or (capacity is not None and np.any(pins[pinned] + sizes[pinned] > capacity)):
        return False
    arrays = held.arrays
    subset = Problem.from_columns(pinned, *(arrays[name][pinned] for name in ("starts", "ends", "sizes", "aligns", "pins")))
    return _fast_valid(subset, pins[pinned], None)


def _overload(problem: Problem, load: tuple, capacity: int) -> _Outcome:
    bytes_needed, at_time, ids = load
    shown = ", ".join(f"'{i}'" for i in ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
    return _Outcome(
        Status.INFEASIBLE,
        message=f"buffers need '{bytes_needed}' bytes at time '{at_time}' but capacity is '{capacity}' (live: {shown}); raise the capacity to at least '{bytes_needed}'",
        overload=Overload(at_time, bytes_needed, capacity, ids),
    )


def _best_greedy(instance: _Instance, algorithms: Sequence[str]) -> tuple[tuple[int, ...], str]:
    """The greedy layout with the lowest peak (ties: the first algorithm listed). Above
    LARGE_THRESHOLD buffers the large planner's orderings 0 and 1 place them, which give
    exactly best-fit's and first-fit's layouts without the greedy kernel's lists of
    overlapping pairs (first-fit on deepnet at 10^6 buffers: 9 GB and 250 s with them)."""
    best = None
    orderings = None  # the large planner, indexed once for both algorithms
    for algorithm in algorithms:
        if algorithm not in instance.greedy_layouts:
            arrays = (instance.starts, instance.ends, instance.sizes, instance.aligns, instance.fixed)
            if len(instance.starts) > LARGE_THRESHOLD:
                if orderings is None:
                    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it

                    orderings = planner(*arrays)
                live_offsets, _ = orderings.run(orderings=1, first=GREEDY_ALGORITHMS.index(algorithm))
            else:
                live_offsets = _greedy.greedy(*arrays, algorithm)
            instance.greedy_layouts[algorithm] = instance.full_offsets(live_offsets)
        offsets = instance.greedy_layouts[algorithm]
        if best is None or _peak(instance.problem, offsets) < _peak(instance.problem, best[0]):
            best = (offsets, algorithm)
    return best


def _large_orderings(count: int, fixed: int) -> list[int]:
    """The orderings of the large planner without a time limit, in the order tried: as many
    of its ``fixed`` orderings as LARGE_PLACEMENTS allows (each places every buffer once),
    at least LARGE_MIN_ORDERINGS. First the sweep of the buffers living at least 1/8 of
    the span (the best single ordering on the trace families of bench/large: 1.0050 x LOAD
    on deepnet at 10^6 buffers where contention leaves 1.0103 and first-fit 1.0177; where
    no buffer lives that long it is the contention one), then contention with the later
    end first (see LARGE_SCHEDULE), the classic first-fit one (1.018 on tracegen where
    best-fit leaves 1.053) and best-fit one (so the result is never worse than either
    greedy baseline), then the other sweeps, contention and the class orderings; above
    LARGE_HUGE_BUFFERS the sweep with a medium tier from 1/8 (17) and the plain one from 1/32
    (16) first (LARGE_HUGE_SCHEDULE)."""
    orderings = max(min(LARGE_MIN_ORDERINGS, fixed), min(fixed, LARGE_PLACEMENTS // max(count, 1)))
    return [_large_ordering(step, count) for step in range(orderings)]


# The orderings of _large.ordering in the order the large planner tries them: the sweep
# of the buffers living at least 1/8 of the span (14), contention with the later end first
# inside a bucket (13), the classic first-fit (1) and best-fit (0), the sweeps from 1/16
# and 1/32 (15, 16) with contention (11) between them, the size classes, contention with
# first-fit, the sweeps with a medium tier (17, 18); then seeded random ones (19, 20, ...).
# The sweep first (_large._swept): deepnet at 10^6 buffers 1.0050 x LOAD against 1.0103 for
# contention (one ordering each); at 10^5, seeds 0..3, two gravity rounds each, 1.0072,
# 1.0267, 1.0178, 1.0040 against 1.0093, 1.0299, 1.0219, 1.0201 (1/16: 1.0069, 1.0227,
# 1.0146, 1.0089). Transformer, unet, training and tracegen: the same peaks as contention
# at 10^5 and 10^6 (unet and training have no buffer that long). idealloc's set: G_1 and
# S_1 lower with contention (1.0000 and 1.0026 against 1.0049 and 1.0029), which comes
# sixth, within the first orderings there (0.05-0.13 s each); S_1 under tela-alloc
# --timeout=2s 1.0004 instead of 1.0000 (contention's layout got the first gravity rounds).
# Before the sweeps, contention came first. Contention by later end second: on deepnet at 10^5 buffers,
# seeds 0..7, each with two gravity rounds, it gave 1.0244, 1.0095, 1.0412, 1.0351, 1.0073,
# 1.0342, 1.0110, 1.0203 x LOAD against 1.0093, 1.0299, 1.0219, 1.0201, 1.0019, 1.0102,
# 1.0236, 1.0014 (it wins on seeds 1 and 6); tela-alloc --timeout=2s then gives 1.0095 and
# 1.0110 on seeds 1 and 6 (1.0299 and 1.0185 with it fourth, after first-fit and best-fit),
# seed 0, the other families and idealloc's set unchanged. Earlier start, later start,
# earlier end, the middle or a random order inside a bucket gave 1.018-1.08 on seeds 0..2,
# never the lowest.
# The same at every size: above 200,000 buffers first-fit came first (a limit may leave room
# for one ordering only there) until contention with a bounded best-fit scan
# (_large.CONTENTION_GAPS) took no longer than first-fit; measured at 10^6 buffers,
# tela-alloc --timeout=10s, contention first against first-fit first: deepnet 1.0103 against
# 1.0177 x LOAD, tracegen, transformer, unet and training LOAD both ways, in 3.0-5.7 s of
# the process against 3.7-8.9 s.
LARGE_SCHEDULE = (14, 13, 1, 0, 15, 11, 16, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 17, 18)
# Above LARGE_HUGE_BUFFERS buffers, where a 10 s limit leaves room for one or two
# orderings, the sweeps with a medium tier come first (17, then 18, from 1/32 of the
# span), then the others in LARGE_SCHEDULE's order: their short tails are scanned in
# (_large.SHORT_TAIL_BUFFERS), so they end sooner and are cut short less often on a loaded
# machine. Measured on deepnet at 10^6, seeds 0..9, one ordering and three gravity rounds
# in-process: 17 1.0028, 1.0029, 1.0049, 1.0035, 1.0017, 1.0021, 1.0056, 1.0050, 1.0041,
# 1.0014 x LOAD (median 1.0032) in 2.0-2.8 s (3.8 s on seeds 1 and 2, whose tail is placed
# as usual); 18 1.0068, 1.0042, 1.0031, 1.0024, 1.0033, 1.0027, 1.0034, 1.0037, 1.0013,
# 1.0041 (the better of the two: median 1.0026); 14 1.0036, 1.0041, 1.0057, 1.0035,
# 1.0015, 1.0020, 1.0043, 1.0049, 1.0030, 1.0013 (median 1.0035; lower than 17 on six
# seeds) in 3.5-4.1 s; the same with the medium tier from 1/16 or 1/4 of the span: medians
# 1.0035 and 1.0057. tela-alloc --timeout=10s (bench/large), seeds 0..9: 1.0028 (median;
# 18 ends in time on about half of them), 17 alone 1.0034, 14 first 1.0038; transformer,
# unet, training and tracegen reach LOAD either way (see README).
# Since the window re-placements (_rewindows), the plain sweep from 1/32 of the span (16)
# comes second instead of 18: in-process, each ordering followed by the re-placements and
# one gravity round, deepnet at 10^6 seeds 0..9: 17 1.0017, 1.0030, 1.0044, 1.0036, 1.0013,
# 1.0008, 1.0056, 1.0037, 1.0028, 1.0012; 18 1.0062, 1.0036, 1.0032, 1.0024, 1.0032,
# 1.0016, 1.0027, 1.0036, 1.0010, 1.0052; 16 1.0054, 1.0036, 1.0022, 1.0022, 1.0028,
# 1.0015, 1.0023, 1.0050, 1.0007, 1.0049: the better of 17 and 16 has the median 1.0019,
# of 17 and 18 1.0020 (the re-placements lower 16's layouts most: seed 2 1.0033 -> 1.0023).
LARGE_HUGE_BUFFERS = 500_000
# ... and there the first LARGE_HUGE_EAGER orderings (17, then the plain sweep from 1/32 of
# the span, 16) run one after the other (or side by side, LARGE_HUGE_LANE), each followed
# at once by the window search, the re-placements and LARGE_HUGE_ROUNDS gravity rounds,
# before the best goes on to the other rounds.
LARGE_HUGE_EAGER = 2
LARGE_HUGE_ROUNDS = 1
LARGE_HUGE_SCHEDULE = (17, 16) + tuple(index for index in LARGE_SCHEDULE if index not in (17, 16))


def _large_ordering(step: int, count: int = 0) -> int:
    """The ordering (of ``_large.ordering``) the large planner tries at ``step`` for
    ``count`` buffers: LARGE_SCHEDULE (LARGE_HUGE_SCHEDULE above LARGE_HUGE_BUFFERS), then
    seeded random ones."""
    schedule = LARGE_HUGE_SCHEDULE if count > LARGE_HUGE_BUFFERS else LARGE_SCHEDULE
    return schedule[step] if step < len(schedule) else step


def _window_load(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray) -> int:
    """LOAD of a few buffers (numpy sweep: ends before starts at the same point)."""
    if len(starts) == 0:
        return 0
    times = np.concatenate((ends, starts))
    deltas = np.concatenate((-sizes, sizes))
    order = np.lexsort((deltas, times))
    return int(np.cumsum(deltas[order]).max())


@dataclass
class _LnsStats:
    windows: int = 0  # exact window searches run
    improved: int = 0  # of which lowered the layout
    timed_out: int = 0  # kernel nodes spent in window searches that ran out of nodes
    work: int = 0  # nodes x window buffers of every window search
    stuck: bool = False  # the highest buffer's window could not be lowered (or grew too large)

    def plus(self, other: _LnsStats) -> _LnsStats:
        """Both searches' counts (two lanes): the sums, stuck when both were."""
        counts = {field.name: getattr(self, field.name) + getattr(other, field.name)
                  for field in dataclasses.fields(self) if field.name != "stuck"}
        return _LnsStats(**counts, stuck=self.stuck and other.stuck)


def _lns(instance: _Instance, offsets: np.ndarray, fixed: np.ndarray, lower: int, rounds: int, stop: float | None, stats: _LnsStats) -> np.ndarray:
    """Large-neighbourhood search on a large planner layout (live offsets, changed in place;
    ``fixed``: the pins the layout was made with).

    Round after round: take the highest buffer (the lowest index at the peak) and the window
    of program points of its lifetime, widened until no buffer reaching the peak crosses
    the window's ends. Unplace the buffers living inside the window and re-place them with
    the exact search kernel, the buffers crossing the window pinned where they are (all
    below the peak): at the lowest useful capacity first (the height of everything else,
    or the window's LOAD if higher), bisecting towards the peak while the kernel proves a
    capacity INFEASIBLE or runs out of nodes (LNS_LOOSER; LNS_BISECTIONS + 1 searches in
    all; the pins merged, see _window). A window that gave no layout then grows: doubled,
    with twice the nodes, and widened further while a movable buffer crossing its ends reaches a lower level each
    time (LNS_LEVEL_STEP) if it stays within the limits (LNS_GROWTH times from
    LNS_WINDOW_NODES, up to LNS_EXACT_BUFFERS free buffers and LNS_WINDOW_BUFFERS in all,
    or a LNS_WINDOW_SHARE-th of the buffers when more); when even that fails the peak cannot be lowered this
    way and the search stops (``stats.stuck``). It also stops within LNS_CLOSE of ``lower``,
    after ``rounds`` window searches, after LNS_PATIENCE_NODES_PER_BUFFER x buffers (at most
    LNS_PATIENCE_NODES) nodes spent in searches that ran out of nodes, after
    LNS_WORK_PER_BUFFER x buffers of work (nodes x window buffers), at ``stop`` (a
    time.monotonic() value) and on the cancel flag. Only ``stop`` and the cancel flag
    depend on time: without them the result is the same on every machine. Every accepted layout is valid: the free buffers are
    placed clear of the pinned ones and of each other, and nothing outside the window
    overlaps a free buffer in time.

    Measured (10^5 buffers): unet 1.167 -> 1.000 x LOAD in two windows; tracegen, once its
    whole-program buffers are lifted (``_lifted``), 1.0177 -> 1.0000 in two windows of
    0.6 s on a busy machine; transformer, on the contention layout, 1.0046 -> 1.0000 in one
    window. On deepnet's contention layout (1.0111) every window around the peak is
    infeasible or runs out of nodes: the long-lived buffers crossing it hold the holes.
    Where the peak is a spike of short buffers above a tight long-lived layer, windows
    lower it (seed 5, the sweep's layout after two gravity rounds: 1.0134 -> 1.0114 x LOAD,
    where the next spike, at point 40,308, keeps a 9.5 MiB hole under a 2-point buffer
    and the long-lived layer's holes: every window there up to 39 free buffers is
    infeasible, one of 72 runs out of nodes).
    Re-placing these windows with the large planner's orderings instead never lowered a
    peak (tried and dropped); windows of a fixed number of starts, re-placed so after the
    search on the settled layouts, do (``_rewindows``).
    """
    from telamalloc.runtime.alloc.exact._search import STATUS_INFEASIBLE, STATUS_OK, search  # imported here: only this path needs it

    starts, ends, sizes, aligns = instance.starts, instance.ends, instance.sizes, instance.aligns
    if _spent(instance, stop):
        return offsets  # (sorting the starts and ends alone takes 0.15 s at 10^6)
    tops = offsets + sizes
    patience = min(LNS_PATIENCE_NODES, max(LNS_WINDOW_NODES, int(LNS_PATIENCE_NODES_PER_BUFFER * len(starts))))
    budget = LNS_WORK_PER_BUFFER * len(starts)
    window_cap = max(LNS_WINDOW_BUFFERS, len(starts) // LNS_WINDOW_SHARE)
    spans = (starts, ends, np.sort(starts), np.sort(ends))  # sorted: how many buffers meet a window, in O(log n)
    movable = fixed < 0
    while len(tops):
        peak = int(tops.max())
        if peak <= lower or peak - lower <= lower * LNS_CLOSE:
            break
        highest = int(np.argmax(tops))
        low, high = int(starts[highest]), int(ends[highest])
        lowered = False
        nodes = LNS_WINDOW_NODES
        for growth in range(LNS_GROWTH):
            low, high, inside, crossing = _widened(spans, tops, movable, peak, low, high, peak)
            if growth and LNS_LEVEL_STEP:  # also clear of the movable buffers above a lower level, if it fits
                level = int(peak * max(0.0, 1.0 - LNS_LEVEL_STEP * growth))
                wide = _widened(spans, tops, movable, peak, low, high, level, window_cap)
                if wide is not None and np.count_nonzero(wide[2] & movable) <= LNS_EXACT_BUFFERS:
                    low, high, inside, crossing = wide
            free = inside & movable
            count = int(np.count_nonzero(free))
            if not count or count > LNS_EXACT_BUFFERS:
                break
            members = np.flatnonzero(inside | crossing)
            if len(members) > window_cap:
                break
            freed, window = _window_problem(members, free[members], LNS_MERGE_PINS, starts, ends, sizes, aligns,
                                            offsets)  # the kernel's first offsets are the freed ones'
            rest = np.where(free, 0, tops)
            floor = max(int(rest.max()), _window_load(starts[members], ends[members], sizes[members]), lower)
            capacity = min(floor, peak - 1)
            for _ in range(LNS_BISECTIONS + 1):
                if stats.windows >= rounds or stats.timed_out >= patience or stats.work >= budget or _spent(instance, stop):
                    return offsets  # the budget or the time is spent
                remaining = None if stop is None else stop - time.monotonic()
                stats.windows += 1
                limit = 0.0 if remaining is None else max(remaining, 1e-6)  # 0.0: no time limit
                result = search(*window, capacity, instance.params, limit, instance.cancel, instance.progress,
                                None, nodes)
                instance.counters.add(result)
                stats.work += int(result.nodes) * len(window[0])
                if result.status == STATUS_OK:
                    offsets[freed] = result.offsets[:len(freed)]
                    tops[freed] = offsets[freed] + sizes[freed]
                    stats.improved += 1
                    lowered = True
                    break
                if result.status != STATUS_INFEASIBLE:  # ran out of nodes: unknown
                    stats.timed_out += result.nodes
                    if not LNS_LOOSER:
                        break  # a wider window instead
                if capacity + 1 >= peak:
                    break
                capacity += 1 + (peak - 2 - capacity) // 2  # halfway to just under the peak
            if lowered:
                break
            width = high - low
            low, high = low - width // 2 - 1, high + width // 2 + 1
            nodes *= 2
        if not lowered:
            stats.stuck = not instance.cancelled() and (stop is None or time.monotonic() < stop)
            break
        _publish_best(instance, int(tops.max()))
    return offsets


def _spent(instance: _Instance, stop: float | None) -> bool:
    """The time is up at ``stop`` (a time.monotonic() value) or the cancel flag is raised."""
    return instance.cancelled() or (stop is not None and time.monotonic() >= stop)


def _window_problem(members: np.ndarray, free: np.ndarray, merge: bool, starts: np.ndarray, ends: np.ndarray,
                    sizes: np.ndarray, aligns: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, tuple]:
    """The problem of a window (``members``, sorted; ``free``: which of them move), for the
    exact kernel (_lns) or the planner (_rewindows): (the buffers whose offsets come first in
    it, the problem's columns). ``merge``: the freed buffers, then the others as merged pins
    (``_window``); else every member, the others pinned where they are."""
    if merge:
        freed = members[free]
        return freed, _window(freed, members[~free], starts, ends, sizes, aligns, offsets)
    return members, (starts[members], ends[members], sizes[members], aligns[members], np.where(free, -1, offsets[members]))


def _window(freed: np.ndarray, pinned: np.ndarray, starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray,
            aligns: np.ndarray, offsets: np.ndarray) -> tuple:
    """The exact kernel's problem for a window of _lns: the ``freed`` buffers first (free),
    then the ``pinned`` ones as the obstacles they are to them, merged (LNS_MERGE_PINS).
    Only the span of the freed buffers' lifetimes [first start, last end) matters: a pin
    is cut to it, and the pins covering all of it become the union of their byte ranges,
    one pin per run of touching ranges (the layout is valid, so the runs are disjoint
    from each other and from the cut pins). The kernel takes each pin as a node of its
    search, so a window under the long-lived buffers of deepnet, 456 buffers of which one
    is free, becomes 85 (1,690 nodes -> 115, 0.024 s -> 0.002 s)."""
    low, high = int(starts[freed].min()), int(ends[freed].max())
    pinned = pinned[(starts[pinned] < high) & (ends[pinned] > low)]
    whole = (starts[pinned] <= low) & (ends[pinned] >= high)
    cut, covering = pinned[~whole], pinned[whole]
    covering = covering[np.argsort(offsets[covering], kind="stable")]
    bottoms, tops = offsets[covering], offsets[covering] + sizes[covering]
    reach = np.maximum.accumulate(tops) if len(tops) else tops
    first = np.ones(len(covering), dtype=bool)
    first[1:] = bottoms[1:] > reach[:-1]  # a new run: clear of every range below it
    heads = np.flatnonzero(first)
    run_bottoms = bottoms[heads]
    run_tops = np.append(reach[heads[1:] - 1], reach[-1:]) if len(heads) else bottoms[:0]
    runs = len(heads)
    return (np.concatenate((starts[freed], np.maximum(starts[cut], low), np.full(runs, low, dtype=np.int64))),
            np.concatenate((ends[freed], np.minimum(ends[cut], high), np.full(runs, high, dtype=np.int64))),
            np.concatenate((sizes[freed], sizes[cut], run_tops - run_bottoms)),
            np.concatenate((aligns[freed], aligns[cut], np.ones(runs, dtype=np.int64))),
            np.concatenate((np.full(len(freed), -1, dtype=np.int64), offsets[cut], run_bottoms)))


def _widened(spans: tuple, tops: np.ndarray, movable: np.ndarray, peak: int, low: int, high: int, level: int,
             cap: int | None = None):
    """The window [low, high) of _lns widened until no movable buffer with a top at or above
    ``level`` and no buffer at the ``peak`` crosses its ends: (low, high, the mask of the
    buffers inside, the mask of those crossing), or None once more than ``cap`` buffers
    would meet it. ``spans``: (starts, ends, sorted starts, sorted ends)."""
    starts, ends, sorted_starts, sorted_ends = spans
    blockers = np.flatnonzero((tops >= level) & (movable | (tops >= peak)))
    block_starts, block_ends = starts[blockers], ends[blockers]
    while True:
        if cap is not None and (np.searchsorted(sorted_starts, high, "left")
                                - np.searchsorted(sorted_ends, low, "right")) > cap:
            return None
        blocking = (block_starts < high) & (block_ends > low) & ((block_starts < low) | (block_ends > high))
        if not blocking.any():
            break
        low, high = min(low, int(block_starts[blocking].min())), max(high, int(block_ends[blocking].max()))
    inside = (starts >= low) & (ends <= high)
    return low, high, inside, (starts < high) & (ends > low) & ~inside


def _rewindows(instance: _Instance, offsets: np.ndarray, fixed: np.ndarray, goal: int, stop: float | None,
               info: dict) -> np.ndarray:
    """Window re-placement on a large planner layout (live offsets, changed in place;
    ``fixed``: the pins the layout was made with): round after round, take the highest
    buffer (the lowest index at the peak) and a window of program points around its start,
    from the start REWINDOW_BUFFERS[0] / 2 starts before it to the one as many after it
    (to the end of the program when there are fewer), then the wider ones of
    REWINDOW_BUFFERS in turn, then (REWINDOW_HOLDING) the windows of
    REWINDOW_HOLDING_BUFFERS / 2 starts before and after the lifetime of the buffer below
    it (the highest other movable buffer live at its start) that hold at most twice the
    widest's starts; unplace the movable buffers living inside the window and re-place
    them with each of the large planner's orderings REWINDOW_ORDERINGS, every other buffer
    meeting the window pinned where it is (merged as for the exact kernel, ``_window``,
    with REWINDOW_MERGE_PINS). The first window with a layout whose highest byte is under
    the peak is taken, with its lowest layout (the first ordering on a tie); a window
    whose pinned buffers reach the peak (the highest buffer among them when it is not
    inside) is passed over, and so is one the same as a window tried before for this
    buffer. Stops when no window lowers the highest buffer, at ``goal``, after
    REWINDOW_ROUNDS windows taken or REWINDOW_WORK_PER_BUFFER x buffers of work (the
    buffers of every ordering run, pins included; both counted in ``info`` over every
    call with it), at ``stop`` (a time.monotonic() value) and on the cancel flag, taking
    the best window found by then; only those two depend on time. Counted in
    ``info["rewindows"]`` (windows taken), ``info["rewindowed"]`` (orderings run) and
    ``info["rewindow_work"]``. Every layout taken is valid: a freed buffer meets only
    buffers that meet the window, and each of those is in the planner's problem, pinned
    or placed (merged: the same bytes over the freed buffers' span).

    Why: an ordering places each buffer once, knowing only the buffers before it; placed
    again with everything around them fixed, the buffers near the highest point often fit
    lower. Measured on deepnet at 10^6 (a prototype on tela-alloc's layouts at
    --timeout=10s, seeds 0..9, each pass followed by a gravity round until neither
    lowered it): 1.00285, 1.00304, 1.00505, 1.00267, 1.00184, 1.00213, 1.00401, 1.00524,
    1.00128, 1.00140 -> 1.00256, 1.00291, 1.00389, 1.00239, 1.00113, 1.00083, 1.00265,
    1.00333, 1.00115, 1.00092 x LOAD in 1-5 s, the first pass giving most of it in
    0.5-1.3 s. Where the highest buffer sits on a long-lived one that reaches nearly as
    high (seed 0 stopped at a 2-point buffer on one living 8,592 points, 3.9 MB), no
    window around its start lowered it; windows of 2 x 10^4 points and more around it
    were higher than the layout they came from (seed 0: 1.0036-1.0245 against 1.00285),
    but the long-lived buffer's lifetime and 3,000 points on either side, re-placed
    first-fit, gave 1.00225 against 1.00256: hence the windows around the buffer below."""
    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it

    starts, ends, sizes, aligns = instance.starts, instance.ends, instance.sizes, instance.aligns
    count = len(starts)
    if count == 0 or _spent(instance, stop):
        return offsets  # (sorting the starts alone takes 0.1 s at 10^6)
    tops = offsets + sizes
    movable = fixed < 0
    sorted_starts = np.sort(starts)
    last = int(ends.max())  # a window holding the last start reaches the end of the program
    budget = REWINDOW_WORK_PER_BUFFER * count
    out = False  # the budget, the time or the cancel flag: the best layout found so far is taken
    while info["rewindows"] < REWINDOW_ROUNDS and not out:
        peak = int(tops.max())
        if peak <= goal:
            break
        highest = int(np.argmax(tops))
        point = int(starts[highest])
        anchors = [(point, point)]
        if REWINDOW_HOLDING:  # then around the buffer below it: the highest other one live at its start
            live = np.flatnonzero((starts <= point) & (ends > point) & movable)
            live = live[live != highest]
            if len(live):
                below = int(live[np.argmax(tops[live])])
                anchors.append((int(starts[below]), int(ends[below]) - 1))
        best = None
        tried = set()
        for (first, final), width in [(anchors[0], width) for width in REWINDOW_BUFFERS] + [
                (anchor, width) for anchor in anchors[1:] for width in REWINDOW_HOLDING_BUFFERS]:
            low_rank = max(0, int(np.searchsorted(sorted_starts, first)) - width // 2)
            high_rank = min(count, int(np.searchsorted(sorted_starts, final)) + width // 2)
            if high_rank - low_rank > 2 * REWINDOW_BUFFERS[-1]:
                continue  # a long-lived anchor: too wide
            low = int(sorted_starts[low_rank])
            high = int(sorted_starts[high_rank]) + 1 if high_rank < count else last
            if (low, high) in tried:
                continue  # a window already tried (one reaching both ends of the program, say)
            tried.add((low, high))
            members = np.flatnonzero((starts < high) & (ends > low))
            free = (starts[members] >= low) & (ends[members] <= high) & movable[members]
            if not free.any() or int(np.where(free, 0, tops[members]).max()) >= peak:
                continue  # nothing to move, or a pinned buffer holds the peak
            moved, window = _window_problem(members, free, REWINDOW_MERGE_PINS, starts, ends, sizes, aligns, offsets)
            made = planner(*window)
            for index in REWINDOW_ORDERINGS:
                out = info["rewindow_work"] >= budget or _spent(instance, stop)
                if out:
                    break
                left = None if stop is None else stop - time.monotonic()
                placed, result = made.run(orderings=1, first=index, seed=instance.params.seed,
                                          time_limit=0.0 if left is None else max(left, 1e-6),
                                          cancel=instance.cancel, slots=False)
                info["rewindowed"] += 1
                info["rewindow_work"] += len(window[0])
                if placed is not None and result["peak"] < peak and (best is None or result["peak"] < best[0]):
                    best = (int(result["peak"]), moved, placed[:len(moved)])
            if best is not None or out:
                break
        if best is None:
            break
        _, members, placed = best
        offsets[members] = placed
        tops[members] = placed + sizes[members]
        info["rewindows"] += 1
        _publish_best(instance, int(tops.max()))
    return offsets


def _lifted(instance: _Instance) -> np.ndarray:
    """The pins the large planner works with: the user's, and when no buffer is pinned, the
    buffers live at every point of the program ("global": weights, constants) stacked at
    the bottom (``_stacked``: by alignment, largest first). They take the same bytes at every point, so stacking them
    below everything loses nothing (alignment aside), and no search has to move them: on
    top of a layout they make the peak a window as long as the program."""
    starts, ends, sizes, aligns, fixed = instance.starts, instance.ends, instance.sizes, instance.aligns, instance.fixed
    if len(starts) < 2 or np.any(fixed >= 0):
        return fixed
    everywhere = np.flatnonzero((starts <= starts.min()) & (ends >= ends.max()))
    if len(everywhere) == 0 or len(everywhere) == len(starts):
        return fixed
    lifted = fixed.copy()
    for index, offset in _stacked(everywhere, sizes, aligns):
        lifted[index] = offset
    return lifted


def _stacked(members: np.ndarray, sizes: np.ndarray, aligns: np.ndarray) -> list[tuple[int, int]]:
    """Offsets stacking ``members`` from 0 with little alignment padding: at each step the
    largest buffer of the largest alignment that needs no padding at the current top (each
    alignment's buffers largest first), else the one needing the least. Deterministic
    (ties by index). Measured on tracegen at 10^6 (1,000 weights, alignments 1, 64 and 256):
    0 bytes of padding where stacking by size alone left 896."""
    queues: dict[int, list[int]] = {}
    for index in members[np.lexsort((members, -sizes[members]))].tolist():
        queues.setdefault(int(aligns[index]), []).append(index)
    heads = dict.fromkeys(queues, 0)
    order = sorted(queues, reverse=True)
    top = 0
    placed = []
    while order:
        fitting = [align for align in order if top % align == 0]
        align = fitting[0] if fitting else min(order, key=lambda a: (-top) % a)
        index = queues[align][heads[align]]
        heads[align] += 1
        if heads[align] == len(queues[align]):
            order.remove(align)
        top = (top + align - 1) // align * align
        placed.append((index, top))
        top += int(sizes[index])
    return placed


def _large_layout(instance: _Instance, target: int | None, anytime: bool, limited: bool = True) -> tuple[tuple[int, ...], int, dict]:
    """The large planner's best layout (all buffers), its peak and the planner's info.

    A fixed schedule of steps: the orderings of ``_large_orderings`` one by one (each a
    whole layout; the better one kept), then with ``anytime`` gravity rounds and a
    large-neighbourhood search on the best layout (``_improved``: LARGE_GRAVITY_ROUNDS
    rounds, LARGE_LNS_ROUNDS window searches and a budget of timed-out ones in all).
    Without a time limit that is the whole budget; with one (``anytime``)
    the first LARGE_EAGER_STEP orderings run back to back (one above LARGE_EAGER_BUFFERS
    buffers), then every ordering that
    improves is followed by them at once (the limit may not leave time for all the
    orderings first), and the schedule goes on with further
    orderings (seeded random ones after LARGE_SCHEDULE) until the time runs out. A limit
    shorter than the first ordering cuts that one short (the rest stacked where each one
    lives or in slots, see _large._scan_rest); after it the
    time only cuts the schedule short, so a longer limit never gives a worse layout (the
    window searches have node budgets and the rounds counts, not time limits, of their
    own: the schedule is the same on every machine). Stops early at ``target`` (a peak at most this).
    ``limited`` False: ignore the time limit and the cancel flag (a fallback layout after
    the search, like the greedy fallback; orderings only).

    Under a time limit, with at most LARGE_LANE_BUFFERS buffers or more than
    LARGE_HUGE_BUFFERS and a second core free (``_lane_count``), a second lane runs beside
    the first in a thread, with its own planner: the orderings of ``_second_schedule`` with
    their own gravity rounds and search, which the first lane then skips; the lower layout
    wins (ties: the first lane's). Above LARGE_HUGE_BUFFERS it starts at once and is
    governed (``_SecondLane.govern``), else it starts once the first ordering misses the
    goal. The planner's placements release the GIL. Without a limit there is one lane, so
    the result does not depend on the cores."""
    from telamalloc.runtime.alloc.large._large import FIXED_ORDERINGS, planner  # imported here: only this path needs it

    count = len(instance.starts)
    schedule = _large_orderings(count, len(FIXED_ORDERINGS))
    remaining = instance.remaining() if limited else None
    stop = None
    if remaining is not None:  # leave time for the independent check of the layout
        remaining -= min(0.5 * remaining, LARGE_CHECK_SECONDS_PER_BUFFER * instance.problem.buffer_count)
        stop = time.monotonic() + remaining
    goal = -1 if target is None else target
    fixed = _lifted(instance)
    arrays = (instance.starts, instance.ends, instance.sizes, instance.aligns, fixed)
    second = None
    if anytime and limited and stop is not None and _lane_count(count) > 1:
        second = _SecondLane(instance, arrays, goal, stop, _second_schedule(count))
    try:
        missed = None
        if second is not None and count > LARGE_HUGE_BUFFERS:  # at once, governed
            second.begin()
            second.govern(threading.get_ident())
            missed = second.settle  # the first ordering complete: the lanes stay as they are
        elif second is not None:
            missed = second.begin  # once the first ordering misses the goal
        made = planner(*arrays)  # indexed once for all of this lane's orderings
        skipped = second if second is not None else ()  # its orderings while it runs them
        done = None if second is None else (lambda: second.at_goal)
        best, best_peak, info = _large_lane(instance, made, schedule, skipped, fixed, goal, stop, anytime, limited,
                                            done=done, missed=missed)
    finally:
        if second is not None:
            second.settle()  # the governor's watch ends
            if second.is_alive():
                second.halt[0] = 1  # this lane is done (the limit, the goal or the caller's cancel): so is the other
                second.join()
    if second is not None:
        best, best_peak, info = second.merged(instance, best, best_peak, info)
    if limited and instance.cancelled():
        instance.counters.cancelled = True
    offsets = instance.full_offsets(best)
    peak = best_peak if count else 0
    if len(instance.live) < len(offsets):  # zero-size buffers count at their offset
        zero = np.setdiff1d(np.arange(len(offsets)), instance.live)
        peak = max(peak, max(offsets[index] for index in zero.tolist()))
    _publish_best(instance, peak)
    return offsets, peak, info


def _lane_count(count: int) -> int:
    """How many lanes the large planner runs under a time limit: two when there are at most
    LARGE_LANE_BUFFERS buffers or more than LARGE_HUGE_BUFFERS (with LARGE_HUGE_LANE's
    orderings to run) and this process may use at least two cores, else one."""
    if LARGE_LANES < 2 or LARGE_LANE_BUFFERS < count <= LARGE_HUGE_BUFFERS or not _second_schedule(count):
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


def _second_schedule(count: int) -> tuple[int, ...]:
    """The orderings the second lane runs for ``count`` buffers."""
    return LARGE_HUGE_LANE if count > LARGE_HUGE_BUFFERS else LARGE_SECOND_LANE


class _SecondLane(threading.Thread):
    """The second lane of _large_layout: the orderings of ``schedule`` on their own planner,
    with the same rounds and search, in a thread; counted in a copy of the instance (its
    own counters, no progress array: the first lane publishes) whose cancel flag is
    ``halt``, raised by the first lane when it is done (at the limit, at the goal or on
    the caller's cancel) or by the governor. ``at_goal``: this lane reached the goal (the
    first one stops). ``index in lane``: the first lane skips this ordering, which this lane
    runs (not once the lane is ``dropped``: not started, or stopped by the governor)."""

    def __init__(self, instance: _Instance, arrays: tuple, goal: int, stop: float,
                 schedule: tuple[int, ...] = LARGE_SECOND_LANE):
        super().__init__(name="telamalloc-large-lane", daemon=True)
        self.halt = np.zeros(1, dtype=np.uint8)
        self.instance = dataclasses.replace(instance, counters=_Counters(), progress=None, cancel=self.halt)
        self.arrays, self.goal, self.stop = arrays, goal, stop
        self.schedule = tuple(schedule)
        self.result = None
        self.at_goal = False
        self.dropped = ""  # why the lane was dropped, if it was
        self.error: BaseException | None = None
        self._settled = threading.Event()  # a first ordering complete (or the lanes done): no more dropping
        self._lock = threading.Lock()

    def __contains__(self, index: object) -> bool:
        return index in self.schedule and not self.dropped

    def begin(self) -> None:
        """Start the lane; without a thread to be had (RuntimeError) the first lane goes on alone
        (with this lane's orderings)."""
        try:
            self.start()
        except RuntimeError:
            self.drop("no thread")

    def settle(self) -> None:
        """Either lane's first ordering is complete (or the lanes are done): the governor stops
        and the lanes stay as they are."""
        with self._lock:
            self._settled.set()

    def drop(self, why: str = "no free core") -> bool:
        """Stop this lane, its orderings given back to the first lane, unless settled; whether it was."""
        with self._lock:
            if self._settled.is_set():
                return False
            self.dropped = why
            self.halt[0] = 1
            return True

    def govern(self, first: int) -> None:
        """Watch, in a thread of its own, the CPU time of the first lane's thread (ident
        ``first``) and of this one until ``settle``: drop this lane when either got less than
        LANE_GOVERN_SHARE of a core in each of LANE_GOVERN_TIMES periods of
        LANE_GOVERN_SECONDS in a row (a busy machine: two lanes there would cut the first
        ordering short; one lane alone gets more of the cores). Without per-thread CPU
        clocks (not Linux), or with the lane not started, the lane is dropped at once."""
        try:
            clocks = (time.pthread_getcpuclockid(first), time.pthread_getcpuclockid(self.ident))
            used = [time.clock_gettime(clock) for clock in clocks]
        except (AttributeError, OSError, TypeError):  # no such clocks, or no thread (ident None)
            self.drop("no CPU clocks" if self.ident is not None else "no thread")
            return
        watch = threading.Thread(target=self._watch, args=(clocks, used), name="telamalloc-lane-governor", daemon=True)
        try:
            watch.start()
        except RuntimeError:
            self.drop("no thread")

    def _watch(self, clocks: tuple, used: list) -> None:
        wall = time.monotonic()
        low = 0
        while not self._settled.wait(LANE_GOVERN_SECONDS):
            now = time.monotonic()
            try:
                now_used = [time.clock_gettime(clock) for clock in clocks]
            except OSError:  # a lane's thread ended: nothing left to govern
                return
            shares = [(after - before) / max(now - wall, 1e-9) for before, after in zip(used, now_used)]
            used, wall = now_used, now
            low = low + 1 if min(shares) < LANE_GOVERN_SHARE else 0
            if low >= LANE_GOVERN_TIMES:
                self.drop()
                return

    def run(self) -> None:
        from telamalloc.runtime.alloc.large._large import planner

        try:
            made = planner(*self.arrays)  # indexed here, beside the first lane's planner
        except MemoryError:  # no room for a second planner: the first lane alone
            self.drop("no memory")
            return
        try:
            self.result = _large_lane(self.instance, made, list(self.schedule), (), self.arrays[4], self.goal,
                                      self.stop, anytime=True, limited=True, extend=False, slots=False,
                                      missed=self.settle)
            self.at_goal = self.result[1] is not None and self.result[1] <= self.goal
        except BaseException as error:  # re-raised by merged() in the caller's thread
            self.error = error

    def merged(self, instance: _Instance, best, best_peak: int, info: dict):
        """The better of the first lane's (best, best_peak, info) and this lane's, the info
        counting both lanes' work."""
        if self.error is not None:
            raise self.error
        counters = self.instance.counters  # its cancelled flag is the halt, not the caller's
        instance.counters.nodes += counters.nodes
        instance.counters.backtracks += counters.backtracks
        instance.counters.restarts += counters.restarts
        if self.result is None:
            return best, best_peak, dict(info, dropped=self.dropped)
        other, other_peak, other_info = self.result
        merged = dict(info, dropped=self.dropped)
        for key in ("orderings", "gravity", "settled", "resweeps", "rewindows", "rewindowed", "rewindow_work"):
            merged[key] = info[key] + other_info[key]
        merged["lns"] = info["lns"].plus(other_info["lns"])
        if other is not None and (best is None or other_peak < best_peak):
            merged["ordering"] = other_info["ordering"]
            merged["resweep_won"] = other_info["resweep_won"]
            return other, other_peak, merged
        return best, best_peak, merged


def _lane_orderings(schedule: list[int], skipped, count: int):
    """``schedule``, then the further orderings of ``_large_ordering`` for ``count``
    buffers, without ``skipped``."""
    for position in itertools.count():
        index = schedule[position] if position < len(schedule) else _large_ordering(position, count)
        if index not in skipped:
            yield index


def _large_lane(instance: _Instance, made, schedule: list[int], skipped, fixed: np.ndarray, goal: int,
                stop: float | None, anytime: bool, limited: bool, extend: bool = True,
                done=None, missed=None, slots: bool = True) -> tuple[np.ndarray | None, int | None, dict]:
    """One lane of _large_layout's schedule on the planner ``made``: the orderings of
    ``schedule`` (then, with ``extend`` under a limit, the further ones of
    ``_large_ordering``), leaving out ``skipped``; return the best live layout, its peak
    and the info. ``done``: checked before each further ordering, stops the lane when true
    (the other lane reached the goal); ``missed``: called once the first ordering is
    complete above the goal (it starts the other lane: where one ordering reaches LOAD,
    as on unet and training, the second lane would only slow the first). ``slots``:
    False: a first ordering cut short gives no layout instead of the rest in size-class
    slots (the second lane: the first lane always has a layout by then, and the
    slotting would only delay the answer).

    ``fixed``: the pins ``made`` was built with. When they lift buffers the user left free
    (``_lifted``), the greedy orderings (0 and 1) run on a planner with the user's pins
    instead, built when first needed, so that they give exactly best-fit's and first-fit's
    layouts (tracegen at 10^5, seed 1: both at LOAD, the lifted ones 128 bytes above it);
    a layout keeps the planner and pins it was made with for its gravity rounds and window
    searches. When the first ordering is one of LARGE_RESWEPT it is re-swept
    (``_resweeps``): without a limit at once, under one only if its layout is still the
    best when the search becomes due (the re-sweep's time would delay the winner's search)."""
    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it

    count = len(instance.starts)
    lifted = not np.array_equal(fixed, instance.fixed)
    plain = None  # the planner on the user's pins
    best = None
    best_made, best_fixed = made, fixed  # the planner and pins of the best layout
    best_peak = None
    best_rounds = 0  # gravity rounds run on the best layout
    info = {"orderings": 0, "ordering": schedule[0], "stopped": False, "rest": "", "lns": _LnsStats(), "gravity": 0,
            "settled": 0, "resweeps": 0, "resweep_won": False, "rewindows": 0, "rewindowed": 0, "rewindow_work": 0}
    step = 0
    searching = False  # a large-neighbourhood search is due on the best layout
    resweep = None  # the first ordering, a sweep: re-swept before the search if still the best (LARGE_RESWEEPS)
    huge = count > LARGE_HUGE_BUFFERS
    eager = LARGE_HUGE_EAGER if huge else 1 if count > LARGE_EAGER_BUFFERS else LARGE_EAGER_STEP
    orderings = _lane_orderings(schedule, skipped, count)
    while True:
        if huge:  # the eager orderings the other lane runs are not waited for (read once the lanes are settled)
            eager = LARGE_HUGE_EAGER - sum(1 for index in schedule[1:LARGE_HUGE_EAGER] if index in skipped)
        if searching and (step >= len(schedule) or stop is not None and step >= eager):  # under a limit: at once
            if resweep is not None and info["ordering"] == resweep:  # the sweep still the best: re-swept
                best, best_peak, best_rounds, info["resweep_won"] = _resweeps(
                    instance, best_made, resweep, best, best_peak, best_rounds, goal, stop, info, done)
                _publish_best(instance, best_peak)
            resweep = None
            if limited and instance.cancelled():  # (the other lane may have reached the goal)
                break
            best, best_peak = _improved(instance, best_made, best, best_fixed, goal, stop, info, limited, best_rounds)
            searching = False
            if best_peak <= goal:
                break
        if step >= len(schedule) and not (extend and anytime and stop is not None):
            break
        index = next(orderings)  # past the budget: the next fixed ones, then seeded random ones
        left = None if stop is None else stop - time.monotonic()
        if step > 0 and (left is not None and left <= 0 or (limited and instance.cancelled()) or (done is not None and done())):
            break
        runner, runner_fixed = made, fixed
        if lifted and index < len(GREEDY_ALGORITHMS):  # best-fit or first-fit: exactly as greedy places them
            if plain is None:
                plain = planner(instance.starts, instance.ends, instance.sizes, instance.aligns, instance.fixed)
            runner, runner_fixed = plain, instance.fixed
        live_offsets, result = runner.run(  # cut short, the first ordering places the rest quickly (_large._scan_rest)
            orderings=1, first=index,
            time_limit=0.0 if left is None else max(left, 1e-6),
            seed=instance.params.seed,
            cancel=instance.cancel if limited else None,
            slots=slots and best is None,  # a later ordering cut short is dropped: no time on its rest
        )
        if live_offsets is None:  # cut short, without slots: dropped like any later one cut short
            info["stopped"] = best is None  # only the first ordering's cut counts as stopped
            break
        step += 1
        if step == 1 and missed is not None and not result["stopped"] and result["peak"] > goal:
            missed()
        if result["stopped"]:
            if best is not None:  # a later ordering cut short: dropped
                break
            info["stopped"] = True
            info["rest"] = result["rest"]  # how its unplaced buffers were placed: "scanned" or "slots"
        info["orderings"] = step
        rounds = 0
        reswept = False  # a re-sweep gave this layout
        if (huge and step <= LARGE_HUGE_EAGER and anytime and limited and not result["stopped"] and result["peak"] > goal
                and not instance.cancelled()):  # (the other lane may have reached the goal)
            # the window search first (where it reaches the goal, as on unet, tracegen and
            # transformer at 10^6, no round is spent), the window re-placements, then
            # compared after its first round
            live_offsets = _lns(instance, live_offsets, runner_fixed, max(goal, 0), LARGE_LNS_ROUNDS, stop, info["lns"])
            result["peak"] = int((live_offsets + instance.sizes).max())
            if result["peak"] > goal:
                live_offsets = _rewindows(instance, live_offsets, runner_fixed, goal, stop, info)
                result["peak"] = int((live_offsets + instance.sizes).max())
            if result["peak"] > goal:
                live_offsets, result["peak"], rounds = _gravity_rounds(
                    runner, live_offsets, min(LARGE_HUGE_ROUNDS, LARGE_GRAVITY_ROUNDS), 0, goal, stop, instance.cancel, info)
        if step == 1 and anytime and limited and not result["stopped"] and count <= LARGE_EAGER_BUFFERS and result["peak"] > goal:
            live_offsets, result["peak"], rounds = _gravity_rounds(
                runner, live_offsets, min(LARGE_GRAVITY_FIRST, LARGE_GRAVITY_ROUNDS), 0, goal, stop, instance.cancel, info)
            if index in LARGE_RESWEPT and runner is made:
                if stop is None:  # no limit: at once, the re-swept layout competing with the others
                    live_offsets, result["peak"], rounds, reswept = _resweeps(
                        instance, runner, index, live_offsets, int(result["peak"]), rounds, goal, stop, info, done)
                else:  # under a limit: only when still the best as the search becomes due
                    resweep = index
        if best is None or result["peak"] < best_peak:
            best, best_peak, info["ordering"], best_rounds = live_offsets, int(result["peak"]), index, rounds
            info["resweep_won"] = reswept
            best_made, best_fixed = runner, runner_fixed
            _publish_best(instance, best_peak)
            searching = anytime and limited and best_peak > goal and not info["stopped"]
        if info["stopped"] or best_peak <= goal:
            break
    return best, best_peak, info


def _resweeps(instance: _Instance, made, index: int, offsets: np.ndarray, peak: int, rounds: int, goal: int,
              stop: float | None, info: dict, done=None) -> tuple[np.ndarray, int, int, bool]:
    """The sweep ordering ``index``'s layout ``offsets`` (after ``rounds`` gravity rounds,
    its peak ``peak``) or a lower one from up to LARGE_RESWEEPS re-sweeps: the
    sweep run again on ``made`` with the buffers living at least 1/LARGE_RESWEEP_DIVISOR of
    the span that are live at the highest point of the last layout swept with the
    long-lived ones (they add up from one re-sweep to the next), then LARGE_GRAVITY_FIRST gravity
    rounds. Returns (layout, peak, rounds, whether a re-sweep gave it); stops when no
    buffer is added, at the goal, the time limit, the cancel flag or ``done()``; a run cut
    short is dropped. Counted in ``info["resweeps"]``.

    Why: the long-lived layer swept alone is tight at the highest point, but the buffers
    living 10^3..10^5 points that cross that point must clear the layer's top over all
    their lifetime, higher elsewhere; the holes under them hold the peak (deepnet). Swept
    with the layer, they interleave with it."""
    starts, ends, sizes = instance.starts, instance.ends, instance.sizes
    span = int(ends.max()) - int(starts.min())
    eligible = (ends - starts) >= -(-span // LARGE_RESWEEP_DIVISOR)
    swept = np.zeros(len(starts), dtype=bool)
    best = (offsets, peak, rounds, False)
    current = offsets
    for _ in range(LARGE_RESWEEPS):
        left = None if stop is None else stop - time.monotonic()
        if best[1] <= goal or instance.cancelled() or (done is not None and done()) or (left is not None and left <= 0):
            break
        tops = current + sizes
        point = int(starts[tops == tops.max()].min())  # the first point at the layout's peak
        added = eligible & (starts <= point) & (ends > point) & ~swept
        if not added.any():
            break
        swept |= added
        current, result = made.run(orderings=1, first=index, swept=swept, time_limit=0.0 if left is None else left,
                                   seed=instance.params.seed, cancel=instance.cancel)
        if result["stopped"]:  # cut short: dropped
            break
        info["resweeps"] += 1
        current, current_peak, ran = _gravity_rounds(made, current, min(LARGE_GRAVITY_FIRST, LARGE_GRAVITY_ROUNDS), 0,
                                                     goal, stop, instance.cancel, info)
        if current_peak < best[1]:
            best = (current, current_peak, ran, True)
    return best


def _improved(instance: _Instance, made, offsets: np.ndarray, fixed: np.ndarray, goal: int, stop: float | None,
              info: dict, limited: bool, done: int) -> tuple[np.ndarray, int]:
    """A large planner layout improved by gravity rounds (``_Planner.settle``), the
    large-neighbourhood search (``_lns``) and window re-placements (``_rewindows``); return
    it and its peak: up to LARGE_GRAVITY_FIRST rounds (``done`` of them already ran on it;
    none above LARGE_EAGER_BUFFERS buffers), the search, the re-placements, then the other
    rounds one by one, LARGE_GRAVITY_ROUNDS in all, the re-placements again after each
    round that lowered the layout (a round moves the buffers the windows then take). All
    stop at ``stop``."""
    cancel = instance.cancel if limited else None
    peak = int((offsets + instance.sizes).max())
    if len(offsets) <= LARGE_EAGER_BUFFERS and done < LARGE_GRAVITY_FIRST:
        offsets, peak, ran = _gravity_rounds(made, offsets, min(LARGE_GRAVITY_FIRST, LARGE_GRAVITY_ROUNDS) - done, done, goal,
                                             stop, cancel, info)
        done += ran
    if peak > goal:
        offsets = _lns(instance, offsets, fixed, max(goal, 0), LARGE_LNS_ROUNDS, stop, info["lns"])
        peak = int((offsets + instance.sizes).max())
    lowered = True  # the window re-placements follow each round that lowered the layout
    while peak > goal:
        if lowered:
            offsets = _rewindows(instance, offsets, fixed, goal, stop, info)
            peak = int((offsets + instance.sizes).max())
        if peak <= goal or done >= LARGE_GRAVITY_ROUNDS:
            break
        before = peak
        offsets, peak, ran = _gravity_rounds(made, offsets, 1, done, goal, stop, cancel, info)  # (stops at ``stop`` itself)
        if not ran:
            break
        done += ran
        lowered = peak < before
    return offsets, peak


def _gravity_rounds(made, offsets: np.ndarray, count: int, first: int, goal: int, stop: float | None, cancel,
                    info: dict) -> tuple[np.ndarray, int, int]:
    """``count`` gravity rounds (``_Planner.settle``) from round ``first``, counted in
    ``info``; return the layout, its peak and the rounds run. Above LARGE_EAGER_BUFFERS
    buffers only the top of the layout moves (``_large.GRAVITY_SHARES_HIGH``)."""
    from telamalloc.runtime.alloc.large._large import GRAVITY_SHARES, GRAVITY_SHARES_HIGH

    shares = GRAVITY_SHARES_HIGH if len(offsets) > LARGE_EAGER_BUFFERS else GRAVITY_SHARES
    settled_offsets, settled = made.settle(offsets, count, first=first, target=goal, deadline=stop, cancel=cancel,
                                           shares=shares)
    info["gravity"] += settled["rounds"]
    info["settled"] += settled["improved"]
    return settled_offsets, settled["peak"], settled["rounds"]


def _large_note(info: dict) -> str:
    cut = ""
    if info["stopped"]:
        rest = ("stacked above the placed buffers where each one lives" if info.get("rest") == "scanned"
                else "in size-class slots on top")
        cut = f"; the time limit or cancel cut the first ordering short (the rest {rest})"
    lns = info["lns"]
    searched = f", {lns.improved} of {lns.windows} window searches lowered it" if lns.windows else ""
    if info.get("rewindowed"):
        searched += f", {info['rewindows']} re-placed window{'' if info['rewindows'] == 1 else 's'} lowered it"
    if info["gravity"]:
        searched += f", {info['settled']} of {info['gravity']} gravity rounds lowered it"
    resweeps = info["resweeps"]
    tried = f" and {resweeps} re-sweep{'s' if resweeps > 1 else ''}" if resweeps else ""
    won = f"#{info['ordering']}{' re-swept' if info['resweep_won'] else ''} won"
    dropped = f"; the second lane was dropped ({info['dropped']})" if info.get("dropped") else ""
    return f"large planner: best of {info['orderings']} orderings{tried} ({won}){searched}{cut}{dropped}"


def _minimize_large(instance: _Instance, capacity: int | None, lower: int, algorithm: str) -> _Outcome:
    """Minimize with the large planner alone (algorithm "large", or a large problem)."""
    offsets, peak, info = _large_layout(instance, lower, anytime=True)
    if capacity is not None and peak > capacity:
        return _Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{_large_note(info)}: no layout within capacity '{capacity}' (peak '{peak}'); the large planner proves nothing, try algorithm 'telamalloc' on a smaller problem",
            fallback=True,
            capacity=capacity,
            peak=peak,
        )
    optimal = peak == lower
    detail = "" if optimal else f", lower bound '{lower}' (the large planner proves no optimality)"
    switched = "" if algorithm == "large" else f" ({len(instance.starts)} buffers > {LARGE_THRESHOLD}: exact search skipped)"
    return _Outcome(Status.OK, _validated(instance, offsets, capacity, "the large planner"), optimal=optimal, peak=peak,
                    capacity=peak if optimal else capacity, message=f"{_large_note(info)}{switched}: peak '{peak}'{detail}")


def _validated(instance: _Instance, offsets: tuple[int, ...], capacity: int | None, producer: str) -> tuple[int, ...]:
    """``offsets``, re-checked by the independent validator: a bug in ``producer`` (the
    search kernel, greedy placement, the large planner) must not leak out as OK."""
    checked = offsets
    if columns_of(instance.problem) is not None and type(offsets) is tuple:  # ints from full_offsets: one conversion
        try:
            checked = np.array(offsets, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            checked = offsets
    violations = validate(instance.problem, checked, capacity)
    if violations:
        raise AssertionError(f"internal error: {producer} returned an invalid layout: {violations[0]}")
    return offsets


def _search(instance: _Instance, members: np.ndarray | None, capacity: int, time_limit: float | None,
            node_limit: int = -1, stop: np.ndarray | None = None):
    """One kernel call on ``members`` (positions into the live arrays; None: all), with at
    most ``node_limit`` nodes (-1: no work budget) and ``stop`` as a second stop flag.

    Returns the SearchResult, or None when the time or the cancel flag left no room to call.
    """
    from telamalloc.runtime.alloc.exact._search import search  # imported here: the greedy paths do not need the kernel

    if instance.cancelled():
        instance.counters.cancelled = True
        return None
    if time_limit is not None and time_limit <= 0:
        return None
    pick = slice(None) if members is None else members
    result = search(
        instance.starts[pick],
        instance.ends[pick],
        instance.sizes[pick],
        instance.aligns[pick],
        instance.fixed[pick],
        capacity,
        instance.params,
        0.0 if time_limit is None else max(time_limit, 1e-6),
        instance.cancel,
        instance.progress,
        stop,
        node_limit,
    )
    instance.counters.add(result)
    return result


def _status_of(result) -> Status:
    from telamalloc.runtime.alloc.exact._search import STATUS_INFEASIBLE, STATUS_OK

    if result is None:
        return Status.TIMEOUT
    if result.status == STATUS_OK:
        return Status.OK
    if result.status == STATUS_INFEASIBLE:
        return Status.INFEASIBLE
    return Status.TIMEOUT


def _checked(instance: _Instance, live_offsets, capacity: int) -> tuple[int, ...]:
    """The full layout from a kernel answer, re-checked: a kernel bug must not leak out as OK."""
    return _validated(instance, instance.full_offsets(live_offsets), capacity, "the search kernel")


@dataclass
class _Group:
    """One static group of the exact path (no lifetime crosses the ends of its time window,
    so its layout is independent of the others') and what the solve learned about it."""

    members: np.ndarray  # positions into the live arrays, in start order (the kernel's order)
    lower: int  # its LOAD, or its highest pinned top: no layout of the group peaks lower
    offsets: np.ndarray | None = None  # its best layout so far (offsets of members)
    peak: int = INT64_MAX  # the peak of that layout
    infeasible_at: int = -1  # the highest capacity proved too small for the group


def _groups_of(instance: _Instance) -> list[_Group]:
    """The static groups (one when decomposition is off), computed once per solve. Facts
    about a group hold at other capacities: a layout within C fits every capacity >= C, a
    proof that C is too small holds for every capacity <= C; ``group_memory`` keeps them
    across the fit calls of minimize (off: each fit call starts afresh)."""
    if instance.groups is None:
        from telamalloc.runtime.alloc.exact._search import _groups  # the kernel's own split, not a copy

        count = len(instance.starts)
        if instance.params.decomposition:
            parts = [np.array(part, dtype=np.int64) for part in _groups(instance.starts, instance.ends)]
        else:
            parts = [np.arange(count, dtype=np.int64)] if count else []
        instance.groups = [_Group(members, _group_lower(instance, members)) for members in parts]
    return instance.groups


def _group_lower(instance: _Instance, members: np.ndarray) -> int:
    sizes = instance.sizes[members]
    times = np.concatenate((instance.starts[members], instance.ends[members]))
    deltas = np.concatenate((sizes, -sizes))
    order = np.lexsort((deltas, times))  # at one time point, ends (negative) before starts
    load = int(np.cumsum(deltas[order]).max()) if len(order) else 0
    pinned = instance.fixed[members]
    top = int(np.max(np.where(pinned >= 0, pinned + sizes, 0))) if len(members) else 0
    return max(load, top)


def _remember_layout(instance: _Instance, offsets: Sequence[int]) -> None:
    """Record a whole layout (all buffers, e.g. greedy's) group by group where it is better."""
    live = np.asarray(offsets, dtype=np.int64)[instance.live]
    for group in _groups_of(instance):
        mine = live[group.members]
        peak = int((mine + instance.sizes[group.members]).max())
        if peak < group.peak:
            group.offsets, group.peak = mine, peak


def _stopped(instance: _Instance) -> bool:
    """The time limit, the cancel flag or Params.node_limit ends the exact schedule."""
    remaining = instance.remaining()
    return instance.out_of_work or instance.cancelled() or (remaining is not None and remaining <= 0)


def _race(instance: _Instance, group: _Group, capacity: int, step: int, need_layout: bool = True,
          strict: bool = False, whole: bool = False) -> tuple[Status, np.ndarray | None]:
    """One step of an exact fit of ``group`` at ``capacity``: (status, offsets of members).

    Step k: the kernel with KERNEL_FIRST_NODES * STEP_GROWTH**k nodes in this thread and
    (with ``Params.cpsat`` and OR-Tools installed) CP-SAT with CPSAT_FIRST_WORK *
    STEP_GROWTH**k work units in another (both release the GIL). CP-SAT starts only when the
    kernel has neither answered within CPSAT_DELAY_SECONDS nor run out of nodes (most groups
    never need it; when it starts does not change what it answers, only how soon). A kernel
    answer wins at once (CP-SAT is stopped); a CP-SAT proof of
    infeasibility wins at once (the kernel is stopped: no layout exists, so the kernel could
    not have found one); a CP-SAT layout waits until the kernel has spent its nodes and is
    taken only when the kernel found none. So, without a time limit, the answer and the
    layout depend on the work budgets alone, not on which thread is faster.
    ``need_layout`` False (the core's yes/no checks): a CP-SAT layout wins at once too.
    ``strict`` (minimize): a CP-SAT layout is taken only when the kernel has spent all its
    nodes, not when a time limit or the cancel flag cut the kernel short, so that a step cut
    short never yields a layout the same step would not give with more time.

    Params.node_limit: a step whose kernel budget would take the nodes charged so far beyond
    it is not started (the schedule ends there, deterministically). A step is charged the
    kernel's nodes when the kernel answered, else its whole budget (when CP-SAT stops the
    kernel the nodes it spent depend on timing; the budget does not).
    ``whole`` (fit mode): a group CP-SAT does not take (see _uses_cpsat) gets one kernel call
    without a node budget (up to Params.node_limit): steps would only restart it.
    """
    members = group.members
    nodes = KERNEL_FIRST_NODES * STEP_GROWTH**step
    limit = instance.params.node_limit
    if whole and not _uses_cpsat(instance, group):
        left = -1 if limit <= 0 else limit - instance.work_used
        result = _search(instance, members, capacity, instance.remaining(), node_limit=left)
        status = _status_of(result)
        if result is not None:
            instance.work_used += int(result.nodes)
            if status is Status.TIMEOUT and 0 <= left <= result.nodes:
                instance.out_of_work = True
        return status, (result.offsets if status is Status.OK else None)
    if limit > 0 and instance.work_used + nodes > limit:
        instance.out_of_work = True
        return Status.TIMEOUT, None
    status, offsets = _race_members(instance, group, capacity, step, nodes, need_layout, strict)
    return status, offsets


def _uses_cpsat(instance: _Instance, group: _Group) -> bool:
    return instance.params.cpsat and cpsat.AVAILABLE and len(group.members) <= CPSAT_MAX_BUFFERS


def _race_members(instance, group, capacity, step, nodes, need_layout, strict):
    members = group.members
    if not _uses_cpsat(instance, group):
        result = _search(instance, members, capacity, instance.remaining(), node_limit=nodes)
        status = _status_of(result)
        _charge(instance, result, status, nodes)
        return status, (result.offsets if status is Status.OK else None)
    stop = np.zeros(1, dtype=np.uint8)
    race = cpsat.Race(
        instance.starts[members], instance.ends[members], instance.sizes[members], instance.aligns[members],
        instance.fixed[members], capacity, CPSAT_FIRST_WORK * STEP_GROWTH**step,
        time_limit=instance.remaining(), seed=instance.params.seed,
    )
    wake = threading.Event()
    skip = []

    def member() -> None:
        wake.wait(CPSAT_DELAY_SECONDS)
        if skip:
            return
        race.time_limit = instance.remaining()
        try:
            answer, _ = race.run()
        except Exception:  # a CP-SAT failure must not hide the kernel's answer: it just proves nothing
            answer = cpsat.UNKNOWN
            race.answer = answer
        if answer == cpsat.INFEASIBLE or (answer == cpsat.FEASIBLE and not need_layout):
            stop[0] = 1

    thread = threading.Thread(target=member, name="telamalloc-cpsat", daemon=True)
    thread.start()
    try:
        result = _search(instance, members, capacity, instance.remaining(), node_limit=nodes, stop=stop)
        status = _status_of(result)
        _charge(instance, result, status, nodes)
        spent = result is not None and result.nodes >= nodes
        if status is not Status.TIMEOUT:
            skip.append(True)
            wake.set()
            race.stop()
            thread.join()
            return status, (result.offsets if status is Status.OK else None)
        wake.set()  # the kernel is done: CP-SAT runs now if it had not started
        while thread.is_alive():
            thread.join(0.01)
            if _stopped(instance):
                race.stop()
    finally:
        wake.set()
        race.stop()
        thread.join()
    if instance.cancelled():
        instance.counters.cancelled = True
    if race.answer == cpsat.INFEASIBLE:
        return Status.INFEASIBLE, None
    if race.answer == cpsat.FEASIBLE and (spent or not strict or not need_layout):
        return Status.OK, race.offsets
    return Status.TIMEOUT, None


def _charge(instance: _Instance, result, status: Status, nodes: int) -> None:
    """Count a step's work for Params.node_limit (see _race)."""
    instance.work_used += int(result.nodes) if result is not None and status is not Status.TIMEOUT else nodes


def _fit_step(instance: _Instance, capacity: int, step: int, strict: bool = False, whole: bool = False) -> Status:
    """One step (see _race) of an exact fit at ``capacity`` over every group; OK when every
    group has a layout within ``capacity`` (see _assemble)."""
    pending = False
    for group in _groups_of(instance):
        if group.peak <= capacity:
            continue
        if group.infeasible_at >= capacity or group.lower > capacity:
            return Status.INFEASIBLE
        if _stopped(instance):
            if instance.cancelled():
                instance.counters.cancelled = True
            return Status.TIMEOUT
        status, offsets = _race(instance, group, capacity, step, strict=strict, whole=whole)
        if status is Status.OK:
            group.offsets = np.asarray(offsets, dtype=np.int64)
            group.peak = int((group.offsets + instance.sizes[group.members]).max())
        elif status is Status.INFEASIBLE:
            group.infeasible_at = max(group.infeasible_at, capacity)
            return Status.INFEASIBLE
        else:
            pending = True  # go on: a later group may still be proved too big
    return Status.TIMEOUT if pending else Status.OK


def _assemble(instance: _Instance, capacity: int | None) -> tuple[int, ...]:
    """The whole layout from the groups' best layouts, re-checked by the validator."""
    live = np.zeros(len(instance.starts), dtype=np.int64)
    for group in _groups_of(instance):
        live[group.members] = group.offsets
    return _validated(instance, instance.full_offsets(live), capacity, "the exact search")


def _exact_fit(instance: _Instance, capacity: int, last_step: int | None = None) -> Status:
    """An exact fit at ``capacity``: steps 0, 1, ... (growing budgets) until one is conclusive,
    the time limit or the cancel flag stops it, or ``last_step`` is done."""
    step = 0
    while True:
        status = _fit_step(instance, capacity, step, whole=True)
        if status is not Status.TIMEOUT or _stopped(instance) or (last_step is not None and step >= last_step):
            return status
        step += 1


def _cpsat_minimize(instance: _Instance, low: int, high: int, step: int):
    """The CP-SAT member of minimize, started at the beginning of each step of the schedule:
    in another thread, CP-SAT fits every group whose best layout peaks at ``high`` (the
    bottlenecks) within ``high - 1`` bytes, with CPSAT_FIRST_WORK * STEP_GROWTH**step work
    units each (no hint: see cpsat): a better layout, or the proof that ``high`` is optimal;
    None without CP-SAT. A fit, not a minimize model of the peak: measured on bench/hard
    --mode minimize, the minimize models' deterministic clock stalled and they proved their
    bound only when the wall-clock safety net stopped them (5 s), where the fit at the best
    peak minus one byte was proved infeasible in 0.01 s."""
    if not (instance.params.cpsat and cpsat.AVAILABLE) or low >= high:
        return None
    work = CPSAT_FIRST_WORK * STEP_GROWTH**step
    races = []
    for group in _groups_of(instance):
        if group.peak < high or group.infeasible_at >= high - 1 or len(group.members) > CPSAT_MAX_BUFFERS:
            continue
        m = group.members
        races.append((group, cpsat.Race(instance.starts[m], instance.ends[m], instance.sizes[m], instance.aligns[m],
                                        instance.fixed[m], high - 1, work, time_limit=instance.remaining(),
                                        seed=instance.params.seed)))
    if not races:
        return None
    stopping = threading.Event()

    def run() -> None:
        for _, race in races:
            if stopping.is_set():
                break
            try:
                race.run()
            except Exception:  # a CP-SAT failure proves nothing; the kernel goes on alone
                race.answer = cpsat.UNKNOWN
            if race.answer == cpsat.INFEASIBLE:
                break  # a bottleneck needs `high` bytes: the best peak is optimal

    thread = threading.Thread(target=run, name="telamalloc-cpsat-minimize", daemon=True)
    thread.start()
    return thread, races, stopping, high


def _cpsat_minimize_join(instance: _Instance, member, attempt: int, status: Status) -> Status:
    """Wait for the CP-SAT member (stopping it at the time limit or cancel) and record what
    it found in the groups: better layouts and proved lower bounds."""
    thread, races, stopping, high = member
    while thread.is_alive():
        thread.join(0.01)
        if _stopped(instance):
            stopping.set()
            for _, race in races:
                race.stop()
    for group, race in races:
        if race.answer == cpsat.INFEASIBLE:
            group.infeasible_at = max(group.infeasible_at, high - 1)
            continue
        if race.answer == cpsat.FEASIBLE and race.offsets is not None and not race.cut:  # cut: see _race's strict
            peak = int((race.offsets + instance.sizes[group.members]).max())
            if peak < group.peak:
                group.offsets, group.peak = race.offsets, peak
            if race.optimal:
                group.infeasible_at = max(group.infeasible_at, peak - 1)
        if race.bound is not None:
            group.infeasible_at = max(group.infeasible_at, race.bound - 1)
    return status


def _core(instance: _Instance, capacity: int, load_time: int | None) -> tuple[Hashable, ...] | None:
    """A small set of buffers that provably cannot fit together within ``capacity``.

    A deletion filter (drop one buffer at a time, keep the drop when the rest is still
    INFEASIBLE) starting from the buffers of the group proved infeasible, or around the most
    contended program point, growing that region until it is infeasible on its own. Each
    check is an exact fit up to step CORE_STEP (see _race: work budgets, so the core does not
    depend on the machine). Bounded: at most CORE_BUDGET_SECONDS, and CORE_BUDGET_FRACTION of
    the time left. When the budget runs out the current set is still a proof, but may not be
    minimal; it is returned only if smaller than all buffers.
    """
    remaining = instance.remaining()
    budget = CORE_BUDGET_SECONDS if remaining is None else min(CORE_BUDGET_SECONDS, CORE_BUDGET_FRACTION * remaining)
    count = len(instance.starts)
    sub = _Instance(instance.problem, instance.live, instance.starts, instance.ends, instance.sizes, instance.aligns,
                    instance.fixed, instance.params, instance.cancel, time.monotonic() + budget, instance.counters,
                    progress=instance.progress)

    def infeasible(members: np.ndarray) -> bool:
        status, _ = _race(sub, _Group(np.asarray(members, dtype=np.int64), 0), capacity, CORE_STEP, need_layout=False)
        return status is Status.INFEASIBLE

    everything = np.arange(count, dtype=np.int64)
    current = everything
    proved = [g for g in (instance.groups or []) if g.infeasible_at >= capacity]
    if proved and len(proved[0].members) < count:
        current = np.sort(proved[0].members)
    elif load_time is not None:
        low, high = load_time, load_time + 1
        for _ in range(4):
            members = np.flatnonzero((instance.starts < high) & (instance.ends > low)).astype(np.int64)
            if len(members) == count:
                break
            if infeasible(members):
                current = members
                break
            low, high = int(instance.starts[members].min()), int(instance.ends[members].max())

    order = sorted(current.tolist(), key=lambda i: (int(instance.sizes[i]), i))
    complete = True
    kept = set(current.tolist())
    for candidate in order:
        if _stopped(sub):
            complete = False
            break
        trial = np.array(sorted(kept - {candidate}), dtype=np.int64)
        if len(trial) and infeasible(trial):
            kept.discard(candidate)
    if not complete and len(kept) == count:
        return None
    live = instance.live.tolist()
    return tuple(instance.problem.buffers[live[i]].id for i in sorted(kept))


def _fit_search(instance: _Instance, capacity: int, load: tuple) -> _Outcome:
    """Exact fit at ``capacity`` (pins and LOAD already checked)."""
    status = _exact_fit(instance, capacity)
    if status is Status.OK:
        return _Outcome(Status.OK, _assemble(instance, capacity), capacity=capacity)
    if status is Status.INFEASIBLE:
        core = _core(instance, capacity, load[1])
        shown = "" if core is None else f"; these {len(core)} buffers cannot fit together: " + ", ".join(f"'{i}'" for i in core[:12]) + (" ..." if len(core) > 12 else "")
        return _Outcome(
            Status.INFEASIBLE,
            message=f"no layout fits in capacity '{capacity}' although LOAD '{load[0]}' does (fragmentation is unavoidable){shown}",
            core=core,
        )
    return _Outcome(Status.TIMEOUT)


def _is_large(instance: _Instance) -> bool:
    """Too many buffers for the greedy baselines' pair lists: the large planner stands in."""
    return len(instance.starts) > LARGE_THRESHOLD


def _heuristic_layout(instance: _Instance, capacity: int) -> tuple[tuple[int, ...], str]:
    """The layout fit mode tries before the search and falls back to after it: the better
    greedy layout, or on a large problem the large planner's (which includes the greedy
    orders and stores no pairs). Like greedy, it ignores the time limit and the cancel flag
    (a fallback must be a whole layout). Computed once per solve."""
    if not _is_large(instance):
        return _best_greedy(instance, GREEDY_ALGORITHMS)
    if "large" not in instance.greedy_layouts:
        offsets, _, _ = _large_layout(instance, capacity, anytime=False, limited=False)
        instance.greedy_layouts["large"] = offsets
    return instance.greedy_layouts["large"], "large"


def _producer(algorithm: str) -> str:
    return "the large planner" if algorithm == "large" else "greedy placement"


def _fallback(instance: _Instance, capacity: int, why: str) -> _Outcome:
    """After a TIMEOUT: the better greedy layout (on a large problem the large planner's),
    which may or may not fit."""
    offsets, algorithm = _heuristic_layout(instance, capacity)
    peak = _peak(instance.problem, offsets)
    if peak <= capacity:
        return _Outcome(Status.OK, _validated(instance, offsets, capacity, _producer(algorithm)), message=f"{why}; {algorithm} found a layout within capacity '{capacity}'", capacity=capacity)
    return _Outcome(
        Status.TIMEOUT,
        offsets,
        message=f"{why}; the {algorithm} fallback (peak '{peak}') does not fit in capacity '{capacity}'",
        fallback=True,
        capacity=capacity,
    )


def _fit(instance: _Instance, capacity: int, algorithm: str, load: tuple, greedy_first: bool) -> _Outcome:
    pins = _pin_conflict(instance, capacity)
    if pins is not None:
        return pins
    if load[0] > capacity:
        return _overload(instance.problem, load, capacity)
    if algorithm in GREEDY_ALGORITHMS:
        offsets, _ = _best_greedy(instance, [algorithm])
        peak = _peak(instance.problem, offsets)
        if peak <= capacity:
            return _Outcome(Status.OK, _validated(instance, offsets, capacity, "greedy placement"), capacity=capacity)
        return _Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{algorithm} found no layout within capacity '{capacity}' (peak '{peak}'); greedy proves nothing, try algorithm 'telamalloc'",
            fallback=True,
            capacity=capacity,
        )
    if algorithm == "large":
        offsets, peak, info = _large_layout(instance, capacity, anytime=False)
        if peak <= capacity:
            return _Outcome(Status.OK, _validated(instance, offsets, capacity, "the large planner"), message=_large_note(info), capacity=capacity, peak=peak)
        return _Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{_large_note(info)}: no layout within capacity '{capacity}' (peak '{peak}'); the large planner proves nothing, try algorithm 'telamalloc'",
            fallback=True,
            capacity=capacity,
            peak=peak,
        )
    if greedy_first:
        offsets, greedy_name = _heuristic_layout(instance, capacity)
        if _peak(instance.problem, offsets) <= capacity:
            return _Outcome(Status.OK, _validated(instance, offsets, capacity, _producer(greedy_name)), message=f"{greedy_name} fits, no search needed", capacity=capacity)
        _remember_layout(instance, offsets)  # the groups where it fits need no search
    outcome = _fit_search(instance, capacity, load)
    if outcome.status is not Status.TIMEOUT:
        return outcome
    why = "cancelled" if instance.counters.cancelled else "the search timed out"
    return _fallback(instance, capacity, why)


def _pinned_top(problem: Problem) -> int:
    """The highest byte a pinned buffer ends at (0: none pinned)."""
    held = columns_of(problem)
    if held is not None:
        pins = held.arrays["pins"]
        return int(np.max(np.where(pins >= 0, pins + held.arrays["sizes"], 0), initial=0))
    return max((b.offset + b.size for b in problem.buffers if b.offset is not None), default=0)


def _minimize(instance: _Instance, capacity: int | None, algorithm: str, load: tuple) -> _Outcome:
    problem = instance.problem
    pins = _pin_conflict(instance, capacity)
    if pins is not None:
        return pins
    pinned_top = _pinned_top(problem)
    lower = max(load[0], pinned_top)
    if capacity is not None and load[0] > capacity:
        return _overload(problem, load, capacity)

    if algorithm == "large" or (algorithm == "telamalloc" and len(instance.starts) > LARGE_THRESHOLD):
        return _minimize_large(instance, capacity, lower, algorithm)
    greedy_algorithms = GREEDY_ALGORITHMS if algorithm == "telamalloc" else (algorithm,)
    best, greedy_name = _best_greedy(instance, greedy_algorithms)
    best_peak = _peak(problem, best)
    if algorithm in GREEDY_ALGORITHMS:
        if capacity is not None and best_peak > capacity:
            return _Outcome(
                Status.TIMEOUT,
                best,
                message=f"{algorithm} found no layout within capacity '{capacity}' (peak '{best_peak}'); greedy proves nothing, try algorithm 'telamalloc'",
                fallback=True,
                capacity=capacity,
            )
        optimal = best_peak == lower
        return _Outcome(Status.OK, _validated(instance, best, capacity, "greedy placement"), optimal=optimal, capacity=best_peak if optimal else capacity,
                        message="" if optimal else f"greedy peak '{best_peak}', lower bound '{lower}' (greedy proves no optimality)")

    if best_peak > lower:  # anytime: a better start than greedy, for a few milliseconds
        large_offsets, large_peak, _ = _large_layout(instance, lower, anytime=False)
        if large_peak < best_peak:
            best, best_peak = _validated(instance, large_offsets, None, "the large planner"), large_peak
    _remember_layout(instance, best)
    if capacity is not None and best_peak > capacity:
        outcome = _fit_search(instance, capacity, load)
        if outcome.status is Status.INFEASIBLE:
            return outcome
        if outcome.status is Status.TIMEOUT:
            why = "cancelled" if instance.counters.cancelled else "the search timed out"
            return _fallback(instance, capacity, why)
        best, best_peak = outcome.offsets, _peak(problem, outcome.offsets)

    # Monotone in time: the schedule below depends on work budgets only (each attempt is one
    # _fit_step with the budgets of `step`); a time limit or the cancel flag only cuts it
    # short. So a longer limit runs a longer prefix of the same schedule and never returns a
    # worse peak, and no limit is never worse than any limit.
    low, high = lower, best_peak
    _publish_bounds(instance, high, low)
    step = 0
    attempt = low  # LOAD first: most instances pack at LOAD
    # then, once per new best peak, one byte below it: where the proof of optimality often is
    # the easiest (the hard sub-problems' optima were proved there in 0.01 s by CP-SAT while
    # the capacities bisection tries in between took seconds each)
    probe = MINIMIZE_PROBE
    member = _cpsat_minimize(instance, low, high, step)
    while low < high and not _stopped(instance):
        if not instance.params.group_memory:
            instance.groups = None
            _remember_layout(instance, best)
        status = _fit_step(instance, attempt, step, strict=True)
        if member is not None:  # joined after the first attempt of its step: deterministic
            status = _cpsat_minimize_join(instance, member, attempt, status)
            member = None
            low = max([low] + [group.infeasible_at + 1 for group in _groups_of(instance)])
            improved = _assemble(instance, None)
            if _peak(problem, improved) < high:
                best, high = improved, _peak(problem, improved)
            if status is Status.OK:
                status = Status.TIMEOUT if _peak(problem, improved) > attempt else Status.OK
            if low >= high:
                _publish_bounds(instance, high, low)
                break
        if status is Status.TIMEOUT:
            if _stopped(instance):
                break
            if attempt + 1 >= high:  # every capacity up to the best peak ran out of work: more work
                step += 1
                attempt = low
                member = _cpsat_minimize(instance, low, high, step)
            elif probe:
                attempt, probe = high - 1, False
            else:  # a capacity closer to the best peak is easier; try it next
                attempt = attempt + 1 + (high - attempt - 1) // 2
            continue
        if status is Status.OK:
            best = _assemble(instance, attempt)
            high = _peak(problem, best)
            probe = MINIMIZE_PROBE
        else:
            low = attempt + 1
        _publish_bounds(instance, high, low)
        if probe and low < high - 1 and attempt != high - 1:
            attempt, probe = high - 1, False
        else:
            attempt = low + (high - 1 - low) // 2
    if instance.cancelled():
        instance.counters.cancelled = True
    optimal = low >= high
    if optimal:
        message = f"minimal peak '{high}'" + (" (LOAD)" if high == load[0] else f" (proved: '{high - 1}' bytes do not fit)")
        return _Outcome(Status.OK, best, optimal=True, capacity=high, message=message, lower_bound=high)
    why = "cancelled" if instance.counters.cancelled else "time limit reached"
    return _Outcome(
        Status.OK,
        best,
        capacity=capacity,
        message=f"best peak '{high}', lower bound '{low}' ({why} before optimality was proved)",
        lower_bound=low,
    )


def solve(
    problem: Problem,
    capacity: int | None = None,
    mode: str | Mode = "fit",
    time_limit: float | None = None,
    algorithm: str = "telamalloc",
    params: Params | None = None,
    cancel: np.ndarray | None = None,
    greedy_first: bool = True,
    progress: np.ndarray | None = None,
) -> Solution:
    """Place every buffer of ``problem``; see the module docstring for modes and algorithms.

    ``capacity`` defaults to ``problem.capacity`` (required in fit mode; an upper bound in
    minimize mode). ``time_limit`` is in seconds for the whole call (None: no limit).
    ``cancel`` is a numpy uint8 array of length 1; setting it non-zero from another thread
    or a signal handler stops the search, which then returns like a timeout.
    ``greedy_first`` (fit mode, algorithm telamalloc): try the greedy baselines before the
    exact search and return their layout when it fits (they take O(n log n + k log d) time,
    the search may take exponential time even on easy large problems); False: search only.
    ``progress``: None, or a numpy int64 array of length 3 that the call resets and keeps
    up to date while it runs, for a display polled from another thread: search nodes and
    backtracks so far, and in minimize mode the best peak found so far (-1 before any).
    Raises ProblemError for problems that cannot be solved as stated.
    """
    started = time.perf_counter()
    began = time.monotonic()  # the time limit covers the whole call: checks, LOAD, validation
    mode = _check_mode(mode)
    if algorithm not in ALGORITHMS:
        raise ProblemError(f"unknown algorithm '{algorithm}'; use " + ", ".join(f"'{name}'" for name in ALGORITHMS))
    if params is None:
        params = Params()
    if not isinstance(params, Params):
        raise ProblemError(f"params must be a Params, got '{type(params).__name__}'")
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit < 0 or time_limit != time_limit):
        raise ProblemError(f"time limit '{time_limit}' must be a number of seconds >= 0 or None")
    cancel = _check_cancel(cancel)
    progress = _check_progress(progress)
    columns = _fast_columns(problem) if isinstance(problem, Problem) else None
    if columns is None:
        _check_problem(problem)
    capacity = _check_capacity(problem.capacity if capacity is None else capacity)
    if mode is Mode.FIT and capacity is None:
        raise ProblemError("fit mode needs a capacity; pass capacity=... or use mode='minimize'")

    deadline = None if time_limit is None else began + float(time_limit)
    instance = _make_instance(problem, params, cancel, deadline, columns)
    instance.progress = progress
    load = compute_load(problem)
    if mode is Mode.FIT:
        outcome = _fit(instance, capacity, algorithm, load, greedy_first)
    else:
        outcome = _minimize(instance, capacity, algorithm, load)
    return _solution(instance, outcome, load[0], algorithm, mode, time.perf_counter() - started, capacity)


def _solution(
    instance: _Instance, outcome: _Outcome, load: int, algorithm: str, mode: Mode, seconds: float, capacity: int | None
) -> Solution:
    """The public result. ``capacity`` is the one given (None: minimize without a bound);
    the outcome's own capacity (the proved optimum, in minimize mode) becomes ``optimum``."""
    counters = instance.counters
    stats = Stats(counters.nodes, counters.backtracks, seconds, counters.restarts, counters.cancelled)
    peak = outcome.peak if outcome.peak is not None else None if outcome.offsets is None else _peak(instance.problem, outcome.offsets)
    summary = _summary(outcome.status, peak, load, seconds, algorithm)
    message = summary if not outcome.message else f"{summary}: {outcome.message}"
    return Solution(
        status=outcome.status,
        offsets=outcome.offsets,
        peak=peak,
        load=load,
        capacity=capacity,
        algorithm=algorithm,
        mode=mode,
        stats=stats,
        optimal=outcome.optimal,
        fallback=outcome.fallback,
        overload=outcome.overload,
        core=outcome.core,
        lower_bound=outcome.lower_bound,
        message=message,
        optimum=peak if mode is Mode.MINIMIZE and outcome.optimal and outcome.status is Status.OK else None,
        ids=_ids(instance.problem),
    )


def _ids(problem: Problem) -> tuple[Hashable, ...]:
    held = columns_of(problem)
    return held.ids() if held is not None else tuple(b.id for b in problem.buffers)


def _summary(status: Status, peak: int | None, load: int, seconds: float, algorithm: str) -> str:
    if status is Status.INFEASIBLE:
        return f"INFEASIBLE ({algorithm}, {seconds:.3f} s)"
    fragmentation = "" if peak is None or load == 0 else f", fragmentation {100 * (peak - load) / load:.2f}%"
    return f"{status.value}: peak '{peak}', LOAD '{load}'{fragmentation} ({algorithm}, {seconds:.3f} s)"
