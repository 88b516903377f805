"""A pack's slices as telamalloc's problem, IREE's greedy layout of them, and the plan that
keeps the smaller (plain data: no IREE needed)."""

from __future__ import annotations

import numpy as np
import pytest

from telamalloc.interop.iree_packs import (
    IreePlanReport,
    PackReport,
    Slice,
    iree_greedy_layout,
    pack_problem,
    plan_pack,
)
from telamalloc.runtime.alloc.validate import validate


def test_inclusive_lifetimes_become_half_open_and_sizes_reserve_the_range_alignment() -> None:
    problem = pack_problem([Slice(0, 1, 100), Slice(1, 1, 64), Slice(2, 5, 0)], 64, 128)
    assert [(b.start, b.end, b.size, b.alignment) for b in problem.buffers] == [
        (0, 2, 128, 64), (1, 2, 128, 64), (2, 6, 0, 64)]


def test_irees_greedy_layout_takes_the_smallest_gap_below_an_overlapping_reservation() -> None:
    # a [0,3] 64 B at 0; b [0,0] 64 B at 64; c [0,3] 64 B at 128; d [1,2] 64 B: the gap of b
    # (64..128, b has ended) is the smallest below c, so d goes there.
    layout = iree_greedy_layout([Slice(0, 3, 64), Slice(0, 0, 64), Slice(0, 3, 64), Slice(1, 2, 64)], 64, 64)
    assert layout.offsets == (0, 64, 128, 64) and layout.total == 192
    # sharing a program point (inclusive ends) is overlapping: [0,1] and [1,2] cannot share
    assert iree_greedy_layout([Slice(0, 1, 10), Slice(1, 2, 10)], 64, 64).offsets == (0, 64)
    assert iree_greedy_layout([Slice(0, 1, 10), Slice(2, 3, 10)], 64, 64).offsets == (0, 0)


def test_irees_greedy_layout_aligns_offsets_and_rounds_sizes_and_the_total() -> None:
    layout = iree_greedy_layout([Slice(0, 2, 100), Slice(0, 2, 30)], 256, 16)
    assert layout.offsets == (0, 256) and layout.total == 288  # 100 -> 112 reserved; 256 + 32
    assert iree_greedy_layout([], 64, 64).total == 0


def test_the_chain_iree_lays_out_above_its_predecessor_is_planned_at_load() -> None:
    slices = [Slice(0, 1, 8192), Slice(1, 2, 2048), Slice(2, 3, 16384)]
    plan = plan_pack(slices)
    assert plan.iree.total == 26624 and (plan.ours.total, plan.load, plan.proved) == (18432, 18432, True)


@pytest.mark.parametrize("seed", range(12))
def test_the_plan_is_valid_never_worse_than_irees_and_never_below_load(seed: int) -> None:
    generator = np.random.default_rng(seed)
    slices = []
    for _ in range(int(generator.integers(1, 40))):
        start = int(generator.integers(0, 30))
        slices.append(Slice(start, start + int(generator.integers(0, 8)), int(generator.integers(1, 5000))))
    offset_alignment, range_alignment = [(64, 64), (16, 64), (256, 16)][seed % 3]
    plan = plan_pack(slices, offset_alignment, range_alignment)
    problem = pack_problem(slices, offset_alignment, range_alignment)
    assert validate(problem, plan.ours.offsets, plan.ours.total) == []
    assert validate(problem, plan.iree.offsets, plan.iree.total) == []
    assert all(offset % offset_alignment == 0 for offset in plan.ours.offsets)
    assert plan.load <= plan.ours.total <= plan.iree.total and plan.ours.total % range_alignment == 0


def test_the_report_sums_the_static_packs_and_counts_the_layouts_kept() -> None:
    ours = PackReport("@main", "m.mlir:3:4", 3, 26624, 18432, 18432, True, "telamalloc", "telamalloc's layout written")
    kept = PackReport("@main", "m.mlir:9:4", 2, 1024, 1024, 1024, True, "iree", "IREE's layout kept")
    dynamic = PackReport("@main", "m.mlir:12:4", 4, None, None, None, False, "iree", "no parametric plan", 4)
    mixed = PackReport("util.initializer", "m.mlir:20:4", 5, 4096, 2048, 2048, True, "telamalloc",
                       "parametric plan of its 2 dynamic slice(s) written", 2)
    report = IreePlanReport((ours, kept, dynamic, mixed))
    assert (report.iree_bytes, report.output_bytes, report.load, report.rewritten, report.left) == (
        27648, 19456, 19456, 2, 2)
    assert report.lines()[2] == "m.mlir:12:4: @main: pack of 4 slice(s): IREE's layout kept: no parametric plan"
    assert report.lines()[3] == ("m.mlir:20:4: util.initializer: pack of 5 slice(s): its static slices: IREE 4096 B, "
                                 "telamalloc 2048 B (proved minimal), LOAD 2048 B: parametric plan of its 2 dynamic "
                                 "slice(s) written")
    assert report.summary() == ("module: 4 pack(s), 2 laid out by telamalloc, 2 left to IREE; transient bytes of static "
                                "packs: IREE 27648, output 19456 (29.6% less), LOAD 19456; 2 of 2 proved minimal")


def test_the_release_check_names_what_is_installed_and_what_to_install(monkeypatch) -> None:
    import importlib.metadata

    from telamalloc.interop import iree_compile

    versions = {"iree-base-compiler": "3.14.0", "iree-base-runtime": "3.13.0"}
    monkeypatch.setattr(importlib.metadata, "version", lambda name: versions[name])
    problem = iree_compile.release_problem()
    assert problem.startswith("iree-base-compiler 3.14.0 installed, but telamalloc's IREE route is written for IREE "
                              "3.13.0; install the 'iree' extra")
    versions["iree-base-compiler"] = "3.13.0rc20261016"
    assert iree_compile.release_problem() is None
    del versions["iree-base-compiler"]

    def version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert iree_compile.release_problem().startswith("IREE's compiler is not installed; install the 'iree' extra")


@pytest.mark.parametrize("seed", range(6))
def test_irees_layout_of_dynamic_slices_as_expressions_is_valid_at_every_size(seed: int) -> None:
    """IREE's packing of dynamic slices (binned by size value above the static part), written
    as expressions by `iree_layout`: non-overlapping and aligned at every sampled size."""
    from telamalloc.interop.iree_dynamic import iree_layout
    from telamalloc.runtime.alloc.problem import Buffer, Problem
    from telamalloc.runtime.alloc.size_expressions import const, evaluate, mul, sym

    generator = np.random.default_rng(seed)
    count = int(generator.integers(2, 25))
    slices, sizes, keys, static = [], [], [], []
    for index in range(count):
        start = int(generator.integers(0, 12))
        slices.append((start, start + int(generator.integers(0, 5))))
        if generator.random() < 0.3:
            size = int(generator.integers(1, 3000))
            sizes.append(const(size)), keys.append(None), static.append((index, size))
        else:
            factor = int(generator.choice([100, 256, 1000]))  # three size values, shared by several slices
            sizes.append(mul(factor, sym("s0"))), keys.append(factor)
    greedy = iree_greedy_layout([Slice(*slices[i], size) for i, size in static], 64, 64)
    offsets, total = iree_layout(sizes, keys, slices, greedy.total, dict(zip([i for i, _ in static], greedy.offsets)),
                                 64, 64)
    for value in (1, 7, 300):
        env = {"s0": value}
        problem = Problem([Buffer(i, start, end + 1, -(-evaluate(size, env) // 64) * 64, alignment=64)
                           for i, ((start, end), size) in enumerate(zip(slices, sizes))])
        placed = [evaluate(offset, env) for offset in offsets]
        assert validate(problem, placed, evaluate(total, env)) == []
