"""A parallel portfolio: ``solve_parallel(problem, jobs, ...)`` runs ``jobs`` copies of
``telamalloc.solve`` in separate processes, each with another search ordering, and returns
the first conclusive answer.

Members. Member 0 runs the caller's ``Params`` unchanged, so a portfolio never explores
less than a plain solve. Member ``k >= 1`` runs ``member_params(params, k)``: the seed
``params.seed + k`` (other tie-breaking and other random orderings in the kernel's restart
portfolio) and, for every even ``k >= 2``, the contention heuristic turned off (orderings by
lifetime and size only). Another seed rescues some instances where the first one is
unlucky; dropping contention rescues a few more but slows most instances down by orders of
magnitude, so member 1 only changes the seed and the contention-free orderings start at
member 2 (docs/decisions.md). Where member 0 answers within the stagger the portfolio only
adds its start-up: it pays off on problems whose search time depends on the ordering.

Staging. All members are forked at once, but only member 0 starts solving; the others wait
until ``STAGGER_SECONDS`` have passed without a conclusive answer, and run at a lower CPU
priority (``MEMBER_NICENESS``). Most problems are solved by member 0 alone before then, and
on a busy machine the others take only the CPU time nobody else wants, so a portfolio is
about as fast as a plain solve where there are no idle cores (two searches sharing one core
would each run at half speed), and faster where there are.

Winning. In fit mode any OK layout and any INFEASIBLE proof is conclusive; in minimize mode
an INFEASIBLE proof or a layout proved optimal. The first conclusive answer wins and the
other members are stopped through shared memory: each member has a cancel byte, polled by
the kernel, and a control byte (wait / run / exit), polled every ``MEMBER_POLL_SECONDS`` by
the member's main thread while its solve runs in a second thread; "exit" makes a loser
leave at once (``os._exit``) instead of finishing its fallback layout and sending it. A
member that has not exited ``STOP_GRACE_SECONDS`` later is terminated, then killed. When no
member is conclusive (time limit, caller's cancel flag), every member is cancelled, finishes
its solve like a timeout and reports; the best answer wins: the lowest peak among valid
layouts, else the fallback with the lowest peak; ties go to the lowest member index.

Determinism. Each member is deterministic for its seed, so the layout returned is the
winner's layout; which member finishes first may vary from run to run on a loaded machine.
``Solution.stats.member`` names the winner and ``stats.jobs`` the number of members; the
other statistics (nodes, backtracks, restarts) are the winner's, ``seconds`` is the
wall-clock time of the whole call.

Limits owned here: processes are forked (``fork`` start method, on Linux; elsewhere
``spawn``, which re-imports telamalloc in every member and costs about half a second). A
fork copies the caller's memory lazily, so the problem is not serialized, but the winner's
layout is (through a pipe). Members ignore SIGINT: a Ctrl-C reaches the caller, which stops
them through their flags (the caller's ``cancel`` flag is polled every ``POLL_SECONDS``);
a ``KeyboardInterrupt`` in the caller stops and reaps every member before it propagates.
On Linux a member also dies with its parent (``PR_SET_PDEATHSIG``), so no member outlives
the call even when the caller is killed. The greedy algorithms and ``jobs == 1`` run a plain
``solve`` in the calling process (greedy placement has no ordering to diversify).
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.problem import Mode, Params, Problem, ProblemError, Solution, Status

POLL_SECONDS = 0.05  # how often the caller's cancel flag and the progress arrays are polled
STAGGER_SECONDS = 0.25  # members after the first start solving only when no answer came by then
MEMBER_POLL_SECONDS = 0.005  # how often a member reads its control byte
MEMBER_NICENESS = 10  # members after the first run at this lower CPU priority (os.nice)
STOP_GRACE_SECONDS = 1.0  # a stopped member that has not exited by then is terminated
DEADLINE_GRACE_SECONDS = 2.0  # past the time limit, members get this long to report before they are stopped
KILL_GRACE_SECONDS = 1.0  # a terminated member that still runs after this is killed
PORTFOLIO_ALGORITHMS = ("telamalloc",)  # the algorithms whose search ordering can be varied
_PR_SET_PDEATHSIG = 1
# A member's control byte (the second byte of its pair in shared memory; the first is the
# kernel's cancel flag).
_WAIT, _RUN, _EXIT = 0, 1, 2


def member_params(params: Params, member: int) -> Params:
    """The search switches of portfolio member ``member`` (0: ``params`` unchanged)."""
    if member == 0:
        return params
    return dataclasses.replace(
        params,
        seed=params.seed + member,
        contention_heuristic=params.contention_heuristic and member % 2 == 1,
    )


def check_jobs(jobs: object) -> int:
    """``jobs`` as an int >= 1, or ProblemError naming the bad value."""
    if type(jobs) is not int or jobs < 1:
        raise ProblemError(f"jobs '{jobs!r}' must be an integer >= 1")
    return jobs


def _start_method() -> str:
    return "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform.startswith("linux") else "spawn"


def _die_with_parent() -> None:
    """Linux: the kernel sends SIGKILL to this process when its parent exits."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the caller's cleanup still reaps members
        return


def _member_main(index, parent_pid, problem, params, flags, counters, connection, solve_arguments, deadline) -> None:
    """Body of one member process: wait for "run", solve in a thread while watching the
    control byte, send ("ok", Solution) or ("error", kind, text); leave at once on "exit"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller owns Ctrl-C and stops us by flag
    _die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    cancel = np.frombuffer(flags, dtype=np.uint8, count=1, offset=2 * index)
    control = np.frombuffer(flags, dtype=np.uint8, count=1, offset=2 * index + 1)
    progress = np.frombuffer(counters, dtype=np.int64, count=3, offset=24 * index)
    if index > 0:
        try:
            os.nice(MEMBER_NICENESS)  # idle cores only: never slow member 0 down
        except (OSError, AttributeError):
            pass
    while control[0] == _WAIT:
        time.sleep(MEMBER_POLL_SECONDS)
    if control[0] == _EXIT:
        os._exit(0)
    arguments = dict(solve_arguments)
    if deadline is not None:
        arguments["time_limit"] = max(0.0, deadline - time.monotonic())
    outcome = []

    def run() -> None:
        try:
            outcome.append(("ok", solve(problem, params=params, cancel=cancel, progress=progress, **arguments)))
        except ProblemError as error:
            outcome.append(("error", "problem", str(error)))
        except BaseException as error:  # noqa: BLE001 - reported to the caller, never lost
            outcome.append(("error", "crash", f"{type(error).__name__}: {error}"))

    worker = threading.Thread(target=run, name=f"telamalloc-member-{index}", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(MEMBER_POLL_SECONDS)
        if control[0] == _EXIT:
            os._exit(0)  # a winner exists: nothing of ours is needed
    message = outcome[0] if outcome else ("error", "crash", "the solve ended without an answer")
    try:
        connection.send(message)
    except OSError:  # the caller stopped listening: it has its answer already
        pass
    finally:
        connection.close()


def _conclusive(solution: Solution) -> bool:
    if solution.status is Status.INFEASIBLE:
        return True
    if solution.status is not Status.OK:
        return False
    return solution.mode is Mode.FIT or solution.optimal


def _rank(item: tuple[int, Solution]) -> tuple:
    """Order of preference among inconclusive answers (smaller is better)."""
    member, solution = item
    has_layout = solution.offsets is not None
    return (
        solution.status is not Status.OK,
        not has_layout,
        solution.peak if has_layout else 0,
        member,
    )


@dataclass
class _Member:
    index: int
    process: multiprocessing.process.BaseProcess
    connection: multiprocessing.connection.Connection
    answer: Solution | None = None
    error: tuple[str, str] | None = None
    done: bool = False


def solve_parallel(
    problem: Problem,
    jobs: int,
    *,
    params: Params | None = None,
    cancel: np.ndarray | None = None,
    progress: np.ndarray | None = None,
    stagger: float = STAGGER_SECONDS,
    **solve_arguments,
) -> Solution:
    """Solve ``problem`` with ``jobs`` portfolio members; see the module docstring.

    Takes the arguments of ``telamalloc.solve`` (``capacity``, ``mode``, ``time_limit``,
    ``algorithm``, ``greedy_first``); ``time_limit`` bounds the whole call. ``cancel`` (the
    caller's flag, e.g. set by a Ctrl-C handler) stops every member; the best answer so far
    is returned as by a plain solve. ``progress`` is kept up to date with the members'
    summed nodes and backtracks and their lowest best peak. ``stagger``: seconds before the
    members after the first start (0: all at once). Raises ProblemError for a problem
    ``solve`` rejects, and for ``jobs`` < 1.
    """
    jobs = check_jobs(jobs)
    params = Params() if params is None else params
    algorithm = solve_arguments.get("algorithm", "telamalloc")
    if jobs == 1 or algorithm not in PORTFOLIO_ALGORITHMS:
        solution = solve(problem, params=params, cancel=cancel, progress=progress, **solve_arguments)
        return dataclasses.replace(solution, stats=dataclasses.replace(solution.stats, member=0, jobs=1))
    if not isinstance(params, Params):
        raise ProblemError(f"params must be a Params, got '{type(params).__name__}'")
    if cancel is not None and not (isinstance(cancel, np.ndarray) and cancel.dtype == np.uint8 and cancel.shape == (1,)):
        raise ProblemError("cancel must be None or a numpy uint8 array of length 1")
    if progress is not None:
        if not (isinstance(progress, np.ndarray) and progress.dtype == np.int64 and progress.shape == (3,)):
            raise ProblemError("progress must be None or a numpy int64 array of length 3")
        progress[:] = (0, 0, -1)
    started = time.perf_counter()
    time_limit = solve_arguments.pop("time_limit", None)
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit < 0 or time_limit != time_limit):
        raise ProblemError(f"time limit '{time_limit}' must be a number of seconds >= 0 or None")
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)

    context = multiprocessing.get_context(_start_method())
    flags = context.RawArray(ctypes.c_uint8, 2 * jobs)  # per member: cancel byte, control byte
    np.frombuffer(flags, dtype=np.uint8)[1] = _RUN  # member 0 starts at once, the others wait
    counters = context.RawArray(ctypes.c_int64, 3 * jobs)
    members: list[_Member] = []
    try:
        for index in range(jobs):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(
                target=_member_main,
                name=f"telamalloc-portfolio-{index}",
                args=(index, os.getpid(), problem, member_params(params, index), flags, counters, sender,
                      solve_arguments, deadline),
                daemon=True,
            )
            process.start()
            sender.close()
            members.append(_Member(index, process, receiver))
        winner = _wait_for_winner(members, flags, counters, cancel, progress, deadline, time.monotonic() + max(0.0, float(stagger)))
        if winner is None or not _conclusive(winner[1]):
            _stop(members, flags)  # members still running are told to stop and report their best
            _collect(members, time.monotonic() + STOP_GRACE_SECONDS + POLL_SECONDS)
            winner = _best_answer(members)
    finally:
        _shutdown(members, flags)
        _publish(counters, jobs, progress)
    if winner is None:
        return _without_members(problem, members, params, cancel, solve_arguments, started)
    index, solution = winner
    seconds = time.perf_counter() - started
    stats = dataclasses.replace(solution.stats, seconds=seconds, member=index, jobs=jobs)
    note = f" [portfolio: member {index} of {jobs} answered first]"
    return dataclasses.replace(solution, stats=stats, message=solution.message + note)


def _wait_for_winner(members, flags, counters, cancel, progress, deadline, stagger) -> tuple[int, Solution] | None:
    """Read answers until one is conclusive, every member has answered or failed, the
    caller's cancel flag is set, or the time limit (plus grace) has passed. At ``stagger``
    (or as soon as member 0 is done without a conclusive answer) every member starts."""
    jobs = len(members)
    view = np.frombuffer(flags, dtype=np.uint8)
    while True:
        problem_errors = [m.error for m in members if m.error is not None and m.error[0] == "problem"]
        if problem_errors:  # solve rejected the problem: every member would say the same
            raise ProblemError(problem_errors[0][1])
        if stagger is not None and (time.monotonic() >= stagger or members[0].done):
            late = deadline is not None and time.monotonic() >= deadline
            view[3::2] = _EXIT if late else _RUN  # past the time limit, waiting members have nothing to add
            stagger = None
        pending = [m for m in members if not m.done]
        if not pending:
            return _best_answer(members)
        if cancel is not None and cancel[0]:
            return None
        if deadline is not None and time.monotonic() > deadline + DEADLINE_GRACE_SECONDS:
            return None
        waitables = [m.connection for m in pending] + [m.process.sentinel for m in pending]
        timeout = POLL_SECONDS if stagger is None else max(0.0, min(POLL_SECONDS, stagger - time.monotonic()))
        multiprocessing.connection.wait(waitables, timeout=timeout)
        _publish(counters, jobs, progress)
        for member in pending:
            _receive(member)
            if member.answer is not None and _conclusive(member.answer):
                return member.index, member.answer


def _receive(member: _Member) -> None:
    """Take the member's answer if it has sent one; mark it done when it has exited."""
    if member.done:
        return
    try:
        if member.connection.poll():
            message = member.connection.recv()
            if message[0] == "ok":
                member.answer = message[1]
            else:
                member.error = (message[1], message[2])
            member.done = True
            return
    except (EOFError, OSError):  # the member died without answering
        member.error = member.error or ("crash", _exit_description(member.process))
        member.done = True
        return
    if not member.process.is_alive():
        try:  # it may have written its answer just before exiting
            if member.connection.poll():
                _receive(member)
                return
        except (EOFError, OSError):
            pass
        member.error = member.error or ("crash", _exit_description(member.process))
        member.done = True


def _exit_description(process) -> str:
    process.join(0)
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"member process killed by signal '{signal.Signals(-code).name}'"
        except ValueError:
            return f"member process killed by signal '{-code}'"
    return f"member process exited with status '{code}' without an answer"


def _collect(members: list[_Member], until: float) -> None:
    """Read the answers of stopping members until all are done or ``until`` passes."""
    while time.monotonic() < until:
        pending = [m for m in members if not m.done]
        if not pending:
            return
        waitables = [m.connection for m in pending] + [m.process.sentinel for m in pending]
        multiprocessing.connection.wait(waitables, timeout=max(0.0, min(POLL_SECONDS, until - time.monotonic())))
        for member in pending:
            _receive(member)


def _best_answer(members: list[_Member]) -> tuple[int, Solution] | None:
    answers = [(m.index, m.answer) for m in members if m.answer is not None]
    for item in answers:
        if _conclusive(item[1]):
            return item
    return min(answers, key=_rank, default=None)


def _stop(members: list[_Member], flags) -> None:
    """Cancel every member's search; they finish their solve like a timeout and report."""
    view = np.frombuffer(flags, dtype=np.uint8)
    view[0::2] = 1
    view[1::2] = np.where(view[1::2] == _WAIT, _EXIT, view[1::2])  # one that never ran has nothing to say


def _shutdown(members: list[_Member], flags) -> None:
    """Stop every member: flag, wait, terminate, kill, reap. Never raises.

    The pipes are closed first: a loser blocked in sending a large layout then gets EPIPE
    and exits at once instead of waiting for STOP_GRACE_SECONDS.
    """
    view = np.frombuffer(flags, dtype=np.uint8)
    view[0::2] = 1
    view[1::2] = _EXIT
    for member in members:
        member.connection.close()
    until = time.monotonic() + STOP_GRACE_SECONDS
    for member in members:
        member.process.join(max(0.0, until - time.monotonic()))
    for member in members:
        if member.process.is_alive():
            member.process.terminate()
    until = time.monotonic() + KILL_GRACE_SECONDS
    for member in members:
        member.process.join(max(0.0, until - time.monotonic()))
    for member in members:
        if member.process.is_alive():
            member.process.kill()
            member.process.join()
        member.process.close()


def _publish(counters, jobs: int, progress: np.ndarray | None) -> None:
    """Summed nodes and backtracks, and the lowest best peak, into the caller's array."""
    if progress is None:
        return
    values = np.frombuffer(counters, dtype=np.int64).reshape(jobs, 3)
    peaks = values[:, 2][values[:, 2] >= 0]
    progress[0] = int(values[:, 0].sum())
    progress[1] = int(values[:, 1].sum())
    progress[2] = int(peaks.min()) if len(peaks) else -1


def _without_members(problem, members, params, cancel, solve_arguments, started) -> Solution:
    """No member answered (all crashed or were killed): the greedy fallback of a plain solve,
    with the members' failure in the message."""
    errors = [m.error[1] for m in members if m.error is not None]
    solution = solve(problem, params=params, cancel=cancel, time_limit=0.0, **solve_arguments)
    why = errors[0] if errors else "no member answered"
    stats = dataclasses.replace(solution.stats, seconds=time.perf_counter() - started, member=None, jobs=len(members))
    return dataclasses.replace(solution, stats=stats, message=f"{solution.message} [portfolio: {why}]")
