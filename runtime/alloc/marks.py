"""Marked buffers: persistent ones and aliases, normalized away before any algorithm runs.

Two marks on a ``Buffer`` (plain data; the IR's `scratchpad.persistent` and
`scratchpad.alias_of` attributes become them, ``passes/analysis/collect.py``):
- ``persistent=True``: state whose value must survive between runs of the function (a KV
  cache, a running mean): its bytes are live over the whole problem, from the earliest
  start to the latest end of any buffer, so no other buffer ever takes them;
- ``alias_of=<id>``: the buffer is the same memory as buffer ``<id>`` (an op updating state
  in place, a result that is an argument's memory): it gets exactly that buffer's offset.
  Both must have the same size. Chains are followed (``c`` aliases ``b`` which aliases
  ``a``: all three share ``a``'s bytes); a cycle is an error. A group with a persistent
  member is persistent.

``normalize`` turns a marked problem into a plain one: each alias group becomes one buffer,
its root's (the member that aliases nothing) id and position, live from the group's first
start to its last end, aligned to its largest alignment, pinned where a member is pinned;
a persistent buffer or group gets the whole horizon as its lifetime; a buffer alone in its
group and not persistent keeps its ``occupancy`` (a group holds its whole rectangle). Every algorithm (the
exact search, the large planner, the greedy baselines, spilling's planner) then honours
the marks by construction, and ``Marks.offsets`` maps a layout back: each buffer gets its
group's offset. The normalization is deterministic (problem order throughout).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError, columns_of


def has_marks(problem: Problem) -> bool:
    """Some buffer of ``problem`` is persistent or an alias (a columnar problem has none: its
    columns hold no marks, so it is never read buffer by buffer here)."""
    if columns_of(problem) is not None:
        return False
    return any(buffer.persistent or buffer.alias_of is not None for buffer in problem.buffers)


@dataclass(frozen=True)
class Marks:
    """How a marked problem maps onto its normalized one."""

    problem: Problem  # the normalized problem: no marks
    group: tuple[int, ...]  # for each original buffer, the index of its buffer in `problem`
    persistent: frozenset[Hashable]  # ids of the original buffers live over the whole horizon
    roots: dict[Hashable, Hashable]  # alias id -> the id of its group's root (aliases only)

    def offsets(self, offsets: Sequence[int] | None) -> tuple[int, ...] | None:
        """The normalized problem's layout as one offset per original buffer."""
        if offsets is None:
            return None
        return tuple(offsets[index] for index in self.group)


def normalize(problem: Problem) -> Marks:
    """The plain problem of a marked one (see the module doc); ProblemError for bad marks.

    The ids must already be unique and hashable (``checks.check_problem``)."""
    buffers = problem.buffers
    index_of = {buffer.id: index for index, buffer in enumerate(buffers)}
    for buffer in buffers:
        if buffer.persistent not in (True, False):
            raise _error(buffer, f"buffer '{buffer.id}' has persistent '{buffer.persistent}'; expected True or False")
    root_of = [_root(index, buffers, index_of) for index in range(len(buffers))]
    members: dict[int, list[int]] = {}
    for index, root in enumerate(root_of):
        members.setdefault(root, []).append(index)
    persistent_groups = {root for root, group in members.items() if any(buffers[i].persistent for i in group)}
    horizon = (min(b.start for b in buffers), max(b.end for b in buffers)) if buffers else (0, 0)
    merged: list[Buffer] = []
    position: dict[int, int] = {}
    for index, buffer in enumerate(buffers):
        if root_of[index] != index:
            continue
        group = [buffers[i] for i in members[index]]
        start, end = (horizon if index in persistent_groups
                      else (min(b.start for b in group), max(b.end for b in group)))
        position[index] = len(merged)
        alone = len(group) == 1 and index not in persistent_groups  # what it holds stays its own (``linked``)
        merged.append(Buffer(buffer.id, start, end, buffer.size, max(b.alignment for b in group),
                             _group_pin(group), occupancy=buffer.occupancy if alone else None))
    return Marks(
        Problem(merged, problem.capacity),
        tuple(position[root] for root in root_of),
        frozenset(buffers[i].id for i, root in enumerate(root_of) if root in persistent_groups),
        {buffers[i].id: buffers[root].id for i, root in enumerate(root_of) if root != i},
    )


def _root(index: int, buffers: Sequence[Buffer], index_of: dict[Hashable, int]) -> int:
    """The end of the alias chain from ``index``, after checking each step."""
    chain = [index]
    while (target := buffers[chain[-1]].alias_of) is not None:
        buffer = buffers[chain[-1]]
        try:
            next_index = index_of.get(target)
        except TypeError:  # an unhashable alias_of
            next_index = None
        if next_index is None:
            raise _error(
                buffer, f"buffer '{buffer.id}' aliases '{target}', which is not a buffer of the problem; name an existing buffer id"
            )
        aliased = buffers[next_index]
        if next_index in chain:
            cycle = " -> ".join(f"'{buffers[i].id}'" for i in chain[chain.index(next_index):] + [next_index])
            raise _error(
                buffer, f"buffer '{buffer.id}' aliases in a cycle ({cycle}); an alias chain must end at a buffer that aliases nothing"
            )
        if aliased.size != buffer.size:
            raise _error(
                buffer, f"buffer '{buffer.id}' ('{buffer.size}' bytes) aliases '{aliased.id}' ('{aliased.size}' bytes); "
                "an alias is the same memory: give both the same size"
            )
        chain.append(next_index)
    return chain[-1]


def _error(buffer: Buffer, message: str) -> ProblemError:
    """A ProblemError that names the buffer to blame in ``buffer_id`` (the CSV reader
    locates it at its row)."""
    error = ProblemError(message)
    error.buffer_id = buffer.id  # type: ignore[attr-defined]
    return error


def _group_pin(group: Sequence[Buffer]) -> int | None:
    """The offset a group is pinned at (None: free); ProblemError when members disagree."""
    pinned = [buffer for buffer in group if buffer.offset is not None]
    for buffer in pinned[1:]:
        if buffer.offset != pinned[0].offset:
            raise _error(
                buffer, f"buffer '{buffer.id}' is pinned at '{buffer.offset}' but shares its bytes with '{pinned[0].id}' "
                f"pinned at '{pinned[0].offset}'; pin aliases at one offset"
            )
    return pinned[0].offset if pinned else None


def describe(problem: Problem, limit: int = 20) -> str | None:
    """One line naming the marked buffers of ``problem`` for a report (None: none is marked):
    ``persistent: kv mean; aliases: kv2 -> kv``."""
    if not has_marks(problem):
        return None
    buffers = problem.buffers
    persistent = [str(b.id) for b in buffers if b.persistent]
    aliases = [f"{b.id} -> {b.alias_of}" for b in buffers if b.alias_of is not None]
    parts = []
    for name, items in (("persistent", persistent), ("aliases", aliases)):
        if items:
            more = f" ... ({len(items)} buffers)" if len(items) > limit else ""
            parts.append(f"{name}: {(' ' if name == 'persistent' else ', ').join(items[:limit])}{more}")
    return "; ".join(parts)


def marked_note(problem: Problem, ids: Sequence[Hashable]) -> str:
    """For a spilling diagnostic: ``; marked, never spilled: 'kv' (persistent), ...`` naming
    the buffers among ``ids`` that are persistent or aliased ('' when none is)."""
    if not has_marks(problem):
        return ""
    marks = normalize(problem)
    aliased = set(marks.roots) | set(marks.roots.values())
    named = [f"'{i}' ({'persistent' if i in marks.persistent else 'aliased'})" for i in ids
             if i in marks.persistent or i in aliased]
    return f"; marked, never spilled: {', '.join(named)}" if named else ""


def marked_solution(marks: Marks, solution, original: Problem):
    """``solution`` (of ``marks.problem``) for the original problem: one offset per original
    buffer, the original ids; the rest (LOAD, peak, bounds, cores) is the normalized
    problem's, whose buffers are the groups' roots."""
    return replace(solution, offsets=marks.offsets(solution.offsets), ids=tuple(b.id for b in original.buffers))
