"""What the large planner did in one solve, and the note the Solution's message carries."""

from __future__ import annotations

from dataclasses import dataclass, field

from telamalloc.runtime.alloc.large.replace import ReplacementStats
from telamalloc.runtime.alloc.large.windows import WindowStats


@dataclass
class LargeInfo:
    """The counts of one lane (or of both lanes, merged)."""

    ordering: str  # the ordering whose layout won
    orderings: int = 0  # orderings completed
    stopped: bool = False  # the time limit or the cancel flag cut the first ordering short
    rest: str = ""  # then how its unplaced buffers were placed: "scanned" or "slots"
    windows: WindowStats = field(default_factory=WindowStats)
    whole: WindowStats = field(default_factory=WindowStats)  # the whole-problem search (effort above 1)
    replacement: ReplacementStats = field(default_factory=ReplacementStats)
    gravity: int = 0  # gravity rounds run
    settled: int = 0  # of which lowered the layout
    resweeps: int = 0  # re-sweeps run
    resweep_won: bool = False  # a re-sweep gave the winning layout
    dropped: str = ""  # why the second lane was dropped, if it was
    heavy: int = 0  # heavy-first layouts made (large/heavy.py)

    def absorb(self, other: LargeInfo) -> None:
        """Add the other lane's counts (not its winner: see ``SecondLane.merged``)."""
        self.orderings += other.orderings
        self.gravity += other.gravity
        self.settled += other.settled
        self.resweeps += other.resweeps
        self.heavy += other.heavy
        self.windows = self.windows.plus(other.windows)
        self.whole = self.whole.plus(other.whole)
        self.replacement = ReplacementStats(self.replacement.taken + other.replacement.taken,
                                            self.replacement.runs + other.replacement.runs,
                                            self.replacement.work + other.replacement.work)


def note(info: LargeInfo) -> str:
    """One line for the Solution's message: the orderings, which one won, what lowered it."""
    cut = ""
    if info.stopped:
        rest = ("stacked above the placed buffers where each one lives" if info.rest == "scanned"
                else "in size-class slots on top")
        cut = f"; the time limit or cancel cut the first ordering short (the rest {rest})"
    windows = info.windows
    searched = f", {windows.improved} of {windows.windows} window searches lowered it" if windows.windows else ""
    if info.whole.windows:
        searched += f", {info.whole.improved} of {info.whole.windows} whole-problem searches lowered it"
    if info.replacement.runs:
        taken = info.replacement.taken
        searched += f", {taken} re-placed window{'' if taken == 1 else 's'} lowered it"
    if info.gravity:
        searched += f", {info.settled} of {info.gravity} gravity rounds lowered it"
    tried = f" and {info.resweeps} re-sweep{'s' if info.resweeps > 1 else ''}" if info.resweeps else ""
    if info.heavy:
        tried += f"{',' if tried else ' and'} a heavy-first layout"
    won = f"{info.ordering}{' re-swept' if info.resweep_won else ''} won"
    dropped = f"; the second lane was dropped ({info.dropped})" if info.dropped else ""
    return f"large planner: best of {info.orderings} orderings{tried} ({won}){searched}{cut}{dropped}"
