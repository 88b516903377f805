"""The static groups of the exact path: the buffers split at the time points no lifetime
crosses (the kernel's static decomposition). The peak is the highest group peak, so each
group is fitted on its own and, with ``Params.group_memory``, remembers across the fit
steps of minimize its best layout (it fits every larger capacity) and the highest capacity
proved too small (every smaller one is too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.instance import Instance, validated
from telamalloc.runtime.alloc.problem import INT64_MAX


@dataclass
class Group:
    """One static group (no lifetime crosses the ends of its time window, so its layout is
    independent of the others') and what the solve learned about it."""

    members: np.ndarray  # positions into the instance's arrays, in start order (the kernel's order)
    lower: int  # its LOAD, or its highest pinned top: no layout of the group peaks lower
    offsets: np.ndarray | None = None  # its best layout so far (offsets of members)
    peak: int = INT64_MAX  # the peak of that layout
    infeasible_at: int = -1  # the highest capacity proved too small for the group


class Groups:
    """The groups of one solve (one group when ``Params.decomposition`` is off), computed
    when first asked for; ``forget`` drops what was learned (``group_memory`` off)."""

    def __init__(self, instance: Instance):
        self.instance = instance
        self._groups: list[Group] | None = None

    def __iter__(self):
        return iter(self.all())

    def all(self) -> list[Group]:
        if self._groups is None:
            from telamalloc.runtime.alloc.exact._search import static_groups  # the kernel's own split, not a copy

            instance = self.instance
            if instance.params.decomposition:
                parts = [np.array(part, dtype=np.int64) for part in static_groups(instance.starts, instance.ends)]
            else:
                parts = [np.arange(instance.count, dtype=np.int64)] if instance.count else []
            self._groups = [Group(members, _group_lower(instance, members)) for members in parts]
        return self._groups

    def known(self) -> list[Group]:
        """The groups computed so far (none before the first ``all``)."""
        return self._groups or []

    def forget(self) -> None:
        self._groups = None

    def remember_layout(self, offsets: Sequence[int]) -> None:
        """Record a whole layout (all buffers, e.g. greedy's) group by group where it is better."""
        live = np.asarray(offsets, dtype=np.int64)[self.instance.live]
        for group in self.all():
            mine = live[group.members]
            peak = int((mine + self.instance.sizes[group.members]).max())
            if peak < group.peak:
                group.offsets, group.peak = mine, peak

    def assemble(self, capacity: int | None) -> tuple[int, ...]:
        """The whole layout from the groups' best layouts, re-checked by the validator."""
        live = np.zeros(self.instance.count, dtype=np.int64)
        for group in self.all():
            live[group.members] = group.offsets
        return validated(self.instance, self.instance.full_offsets(live), capacity, "the exact search")


def _group_lower(instance: Instance, members: np.ndarray) -> int:
    sizes = instance.sizes[members]
    times = np.concatenate((instance.starts[members], instance.ends[members]))
    deltas = np.concatenate((sizes, -sizes))
    order = np.lexsort((deltas, times))  # at one time point, ends (negative) before starts
    load = int(np.cumsum(deltas[order]).max()) if len(order) else 0
    pinned = instance.fixed[members]
    top = int(np.max(np.where(pinned >= 0, pinned + sizes, 0))) if len(members) else 0
    return max(load, top)
