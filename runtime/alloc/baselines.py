"""The greedy baselines as a solve uses them: best-fit and first-fit by decreasing size (as
XLA, TFLite and IREE place buffers), computed once per solve, as the fallback layout and the
starting upper bound. Above ``LargeConfig.threshold`` buffers the large planner's "best-fit"
and "first-fit" orderings give the very same layouts without the greedy kernel's lists of
overlapping pairs."""

from __future__ import annotations

from collections.abc import Sequence

from telamalloc.runtime.alloc import _greedy
from telamalloc.runtime.alloc.instance import Budget, Instance, Outcome, peak_of, validated
from telamalloc.runtime.alloc.problem import Status

GREEDY_ALGORITHMS = ("best-fit", "first-fit")


def is_large(instance: Instance) -> bool:
    """Too many buffers for the greedy baselines' pair lists: the large planner stands in."""
    return instance.count > instance.params.large.threshold


def producer(algorithm: str) -> str:
    """Who made a layout of ``algorithm``, for the validator's internal-error message."""
    return "the large planner" if algorithm == "large" else "greedy placement"


class Baselines:
    """The greedy layouts (all buffers) of one solve, each computed once."""

    def __init__(self, instance: Instance):
        self.instance = instance
        self.layouts: dict[str, tuple[int, ...]] = {}

    def best(self, algorithms: Sequence[str]) -> tuple[tuple[int, ...], str]:
        """The greedy layout with the lowest peak (ties: the first algorithm listed)."""
        instance = self.instance
        best = None
        made = None  # the large planner, indexed once for both algorithms
        for algorithm in algorithms:
            if algorithm not in self.layouts:
                if is_large(instance):
                    from telamalloc.runtime.alloc.large._large import planner  # imported here: only this path needs it
                    from telamalloc.runtime.alloc.large.orderings import index_of

                    if made is None:
                        made = planner(*instance.arrays, config=instance.params.large.placement)
                    live_offsets, _ = made.run(orderings=1, first=index_of(algorithm))
                else:
                    live_offsets = _greedy.greedy(*instance.arrays, algorithm)
                self.layouts[algorithm] = instance.full_offsets(live_offsets)
            offsets = self.layouts[algorithm]
            if best is None or peak_of(instance.problem, offsets) < peak_of(instance.problem, best[0]):
                best = (offsets, algorithm)
        return best

    def heuristic(self, budget: Budget, capacity: int) -> tuple[tuple[int, ...], str]:
        """The layout fit mode tries before the search and falls back to after it: the better
        greedy layout, or on a large problem the large planner's (which includes the greedy
        orderings and stores no pairs). The large planner's heeds the time limit and the
        cancel flag: an ordering cut short still gives a whole layout (its rest stacked
        above the placed buffers, see large/_large.pyx)."""
        if not is_large(self.instance):
            return self.best(GREEDY_ALGORITHMS)
        if "large" not in self.layouts:
            from telamalloc.runtime.alloc.large.layout import large_layout

            offsets, _, _ = large_layout(self.instance, budget, capacity, anytime=False)
            self.layouts["large"] = offsets
        return self.layouts["large"], "large"

    def fallback(self, budget: Budget, capacity: int, why: str) -> Outcome:
        """After a TIMEOUT: the better greedy layout (on a large problem the large planner's),
        which may or may not fit."""
        offsets, algorithm = self.heuristic(budget, capacity)
        peak = peak_of(self.instance.problem, offsets)
        if peak <= capacity:
            return Outcome(Status.OK, validated(self.instance, offsets, capacity, producer(algorithm)),
                           message=f"{why}; {algorithm} found a layout within capacity '{capacity}'", capacity=capacity)
        return Outcome(
            Status.TIMEOUT,
            offsets,
            message=f"{why}; the {algorithm} fallback (peak '{peak}') does not fit in capacity '{capacity}'",
            fallback=True,
            capacity=capacity,
        )
