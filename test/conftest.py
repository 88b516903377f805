"""Fixtures shared by the test directories: processes seen through Linux's /proc, for the
tests that check that no worker or portfolio member outlives its parent; the shared
benchmark data; and, after every test, the check that no thread telamalloc started
outlives the call that started it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest


def _state_and_parent(pid: int | str) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # the name may hold spaces and ')'
    except OSError:
        return None
    return fields[0], int(fields[1])


def _children_of(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            status = _state_and_parent(entry)
            if status is not None and status[1] == pid and status[0] != "Z":
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its exit status is left)."""
    status = _state_and_parent(pid)
    return status is not None and status[0] != "Z"


@pytest.fixture
def children_of() -> Callable[[int], set[int]]:
    return _children_of


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return _alive


REPO = Path(__file__).resolve().parents[1]


def shared_root() -> Path:
    """The shared data: ``$TELAMALLOC_SHARED``, else ``../shared`` beside the repository."""
    return Path(os.environ.get("TELAMALLOC_SHARED") or REPO.parent / "shared")


@pytest.fixture(scope="session")
def shared_benchmarks() -> Path:
    """``<shared>/benchmarks`` (MiniMalloc's challenging set, idealloc's large problems, the
    audit's findings). Missing, the test is skipped with the reason, except under
    ``CI=true``, where a missing set is a failure: CI must run every test."""
    folder = shared_root() / "benchmarks"
    if not folder.is_dir():
        message = (f"the shared benchmarks are not at '{folder}'; set TELAMALLOC_SHARED to the folder "
                   "that holds benchmarks/")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


@pytest.fixture(autouse=True)
def no_thread_outlives_its_call():
    """Every thread a telamalloc call starts (CP-SAT members, second lanes, governors: all
    named ``telamalloc-...``) is joined before the call returns: none may be alive once a
    test is over."""
    before = {thread.ident for thread in threading.enumerate()}
    yield
    left = [thread.name for thread in threading.enumerate()
            if thread.name.startswith("telamalloc-") and thread.ident not in before and thread.is_alive()]
    assert left == [], f"threads left running: {left}"
