"""tela-alloc end to end through a subprocess: every exit status, no traceback, no partial output."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from telamalloc.runtime.alloc.csv_io import write_problem
from telamalloc.runtime.alloc.generators.puzzles import subset_sum_problem
from telamalloc.tools.tela_alloc import main, parse_duration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "input.12.csv"
PUZZLE = subset_sum_problem()  # infeasible at its capacity; no search refutes it in less than hours


@pytest.fixture
def hard_csv(tmp_path) -> Path:
    """The puzzle as a CSV problem: every search on it is cut short."""
    path = tmp_path / "puzzle.csv"
    write_problem(path, PUZZLE)
    return path

# Ten buffers that fit in no layout at their LOAD 7 (see test/runtime/alloc/test_api.py).
CORE_CSV = """id,lower,upper,size
b0,0,1,3
b1,1,4,2
b2,2,4,1
b3,3,4,3
b4,1,3,2
b5,3,6,1
b6,4,7,3
b7,2,3,2
b8,5,6,3
b9,0,2,3
"""


def run(*arguments, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "telamalloc.tools.tela_alloc", *arguments], capture_output=True, text=True, timeout=timeout
    )


def fields(stdout):
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


def test_check_bound_confirms_the_certificate_of_a_bound_above_load(tmp_path):
    """CORE_CSV fits in no layout at its LOAD 7: the large planner proves 8 from a
    sub-problem, and --check-bound confirms the certificate independently."""
    path = tmp_path / "core.csv"
    path.write_text(CORE_CSV)
    result = run(f"--input={path}", "--minimize", "--algorithm=large", "--check-bound")
    assert result.returncode == 0, result.stderr
    report = fields(result.stdout)
    assert report["load"] == "7" and report["peak"] == "8" and report["gap"] == "0.00%"
    assert report["lower bound"].startswith("8 (") and "do not fit in 7 bytes" in report["lower bound"]
    assert report["bound check"].startswith("confirmed: ")


def _solved_report(tmp_path):
    """CORE_CSV solved by the large planner with a JSON report: (problem, report, its data)."""
    problem, report = tmp_path / "core.csv", tmp_path / "report.json"
    problem.write_text(CORE_CSV)
    solved = run(f"--input={problem}", "--minimize", "--algorithm=large", f"--report={report}")
    assert solved.returncode == 0, solved.stderr
    return problem, report, json.loads(report.read_text())


def test_check_bound_reads_the_certificates_of_a_report_and_refutes_a_false_one(tmp_path):
    """--check-bound=REPORT checks a JSON report's certificates against --input, no solve:
    confirmed (exit 0), a bound raised by hand refuted (exit 4)."""
    problem, report, data = _solved_report(tmp_path)
    checked = run(f"--input={problem}", f"--check-bound={report}")
    assert checked.returncode == 0 and "bound check: core: lower bound 8 confirmed: " in checked.stdout
    data["reports"][0]["certificate"]["bound"] = 9  # the ten buffers fit in 8 bytes
    (tmp_path / "raised.json").write_text(json.dumps(data))
    refuted = run(f"--input={problem}", f"--check-bound={tmp_path / 'raised.json'}")
    assert refuted.returncode == 4 and "core: the lower bound '9' is refuted" in refuted.stderr
    assert "Traceback" not in refuted.stderr


def test_check_bound_names_a_malformed_certificate(tmp_path):
    problem, _, data = _solved_report(tmp_path)
    data["reports"][0]["certificate"]["kind"] = "magic"
    (tmp_path / "magic.json").write_text(json.dumps(data))
    malformed = run(f"--input={problem}", f"--check-bound={tmp_path / 'magic.json'}")
    assert malformed.returncode == 2 and "certificate kind 'magic' is not one of load, pins, subset" in malformed.stderr
    assert "Traceback" not in malformed.stderr


def test_check_bound_of_a_report_refuses_options_that_need_a_solve(tmp_path):
    problem, report, _ = _solved_report(tmp_path)
    solving = run(f"--input={problem}", f"--check-bound={report}", f"--output={tmp_path / 'x.csv'}")
    assert solving.returncode == 2 and "checks a report without solving; drop --output" in solving.stderr
    assert not (tmp_path / "x.csv").exists()


def test_check_bound_of_an_unreadable_report_is_one_line(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    (tmp_path / "empty.json").write_text(json.dumps({"reports": []}))
    (tmp_path / "text.json").write_text("not json")
    for name, message in (("missing.json", "cannot read '"), ("empty.json", "holds no reports; write one with --report"),
                          ("text.json", "is not JSON")):
        result = run(f"--input={problem}", f"--check-bound={tmp_path / name}")
        assert result.returncode == 2 and message in result.stderr, (name, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_effort_gives_the_large_planner_more_work_and_the_same_layout_every_time(tmp_path):
    """--effort N: LargeConfig.effort from the command line; a work budget, so two runs write
    the same layout, and it refuses a time limit beside it (the clock would govern)."""
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    outputs = [tmp_path / "one.csv", tmp_path / "two.csv"]
    for output in outputs:
        result = run(f"--input={problem}", "--minimize", "--algorithm=large", "--effort=3", f"--output={output}")
        assert result.returncode == 0 and fields(result.stdout)["peak"] == "8", result.stderr
    assert outputs[0].read_bytes() == outputs[1].read_bytes()
    timed = run(f"--input={problem}", "--minimize", "--effort=2", "--timeout=1s")
    assert timed.returncode == 2 and "--effort is a work budget for runs without --timeout" in timed.stderr


def test_effort_below_one_is_a_usage_error(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    for effort in ("0", "1.5"):
        result = run(f"--input={problem}", "--minimize", f"--effort={effort}")
        assert result.returncode == 2 and f"effort '{effort}' must be a whole number >= 1" in result.stderr


def test_effort_applies_to_one_problem_solved_whole(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    batch = run(f"--batch={tmp_path}", f"--output-dir={tmp_path / 'out'}", "--capacity=8", "--effort=2")
    assert batch.returncode == 2 and "--effort applies to --input only" in batch.stderr
    spill = run(f"--input={problem}", "--capacity=8", "--spill", "--effort=2")
    assert spill.returncode == 2 and "--effort does not apply to --spill" in spill.stderr


def test_solved_writes_and_validates(tmp_path):
    out = tmp_path / "out.csv"
    result = run("--capacity=12", f"--input={EXAMPLE}", f"--output={out}", "--validate")
    assert result.returncode == 0, result.stderr
    report = fields(result.stdout)
    assert report["status"] == "OK" and report["peak"] == "12" and report["load"] == "12"
    assert report["fragmentation"] == "0.00%" and "nodes" in report and "backtracks" in report
    assert f"validated: {out} (5 buffers, capacity 12, no violations)" in result.stdout
    lines = out.read_text().splitlines()
    assert lines[0] == "id,lower,upper,size,offset"
    assert [line.split(",")[0] for line in lines[1:]] == ["b1", "b2", "b3", "b4", "b5"]


def test_overload_is_infeasible_and_writes_nothing(tmp_path):
    out = tmp_path / "out.csv"
    result = run("--capacity=11", f"--input={EXAMPLE}", f"--output={out}")
    assert result.returncode == 1
    assert fields(result.stdout)["overload"] == "time 0 needs 12 bytes > capacity 11; live: b1 b3 b5"
    assert not out.exists() and os.listdir(tmp_path) == []


def test_infeasible_below_load_prints_the_core(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    result = run("--capacity=7", f"--input={problem}", f"--output={tmp_path / 'out.csv'}")
    assert result.returncode == 1
    assert fields(result.stdout)["core"] == "b0 b1 b2 b3 b4 b5 b6 b7 b8 b9"
    assert not (tmp_path / "out.csv").exists()


def test_greedy_failure_is_a_timeout(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    result = run("--capacity=7", f"--input={problem}", "--algorithm=best-fit", f"--output={tmp_path / 'out.csv'}")
    assert result.returncode == 3
    assert "greedy proves nothing" in result.stdout and "fallback: yes" in result.stdout
    assert not (tmp_path / "out.csv").exists()


def test_minimize_without_capacity(tmp_path):
    problem = tmp_path / "core.csv"
    problem.write_text(CORE_CSV)
    out = tmp_path / "out.csv"
    result = run("--minimize", f"--input={problem}", f"--output={out}", "--validate")
    assert result.returncode == 0, result.stderr
    report = fields(result.stdout)
    assert report["optimal"] == "yes" and report["peak"] == "8" and report["optimum"] == "8"
    assert report["capacity"] == "none"  # none was given: no capacity is invented from the peak
    assert "capacity none, within the peak 8, no violations" in result.stdout


def test_inclusive_columns_round_trip(tmp_path):
    problem = tmp_path / "p.csv"
    problem.write_text("id,begin,end,size\nx,0,4,8\ny,5,9,8\n")
    out = tmp_path / "out.csv"
    assert run("--capacity=8", f"--input={problem}", f"--output={out}", "--validate").returncode == 0
    assert out.read_text() == "id,begin,end,size,offset\nx,0,4,8,0\ny,5,9,8,0\n"


@pytest.mark.parametrize(
    "arguments, text",
    [
        ([f"--input={EXAMPLE}"], "--capacity is required unless --minimize is given"),
        (["--capacity=12"], "the following arguments are required: --input"),
        ([f"--input={EXAMPLE}", "--capacity=12", "--timeout=soon"], "timeout 'soon' is not a duration"),
        ([f"--input={EXAMPLE}", "--capacity=12", "--timeout=0s"], "must be positive"),
        ([f"--input={EXAMPLE}", "--capacity=-3"], "capacity '-3' is not a number of bytes"),
        ([f"--input={EXAMPLE}", "--capacity=12", "--algorithm=tetris"], "invalid choice: 'tetris'"),
        (["--input=/nonexistent/p.csv", "--capacity=12"], "/nonexistent/p.csv: cannot read"),
        ([f"--input={EXAMPLE}", "--capacity=12", "--output=/nonexistent/dir/out.csv"], "cannot write '/nonexistent/dir/out.csv': No such file or directory"),
    ],
)
def test_usage_errors_are_one_line(arguments, text):
    result = run(*arguments)
    assert result.returncode == 2
    assert result.stderr.startswith("tela-alloc: error: ") and text in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_bad_csv_reports_file_and_line(tmp_path):
    problem = tmp_path / "bad.csv"
    problem.write_text("id,lower,upper,size\na,0,2,4\nb,5,3,4\n")
    result = run("--capacity=12", f"--input={problem}", f"--output={tmp_path / 'out.csv'}")
    assert result.returncode == 2
    assert result.stderr == f"tela-alloc: error: {problem}:3: 'upper' '3' <= 'lower' '5'; lifetimes are half-open [lower, upper)\n"
    assert not (tmp_path / "out.csv").exists()


def test_parse_duration():
    assert parse_duration("10") == 10.0
    assert parse_duration("10s") == 10.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("2m") == 120.0
    assert parse_duration("1.5s") == 1.5


def test_main_in_process(tmp_path, capsys):
    assert main(["--capacity=12", f"--input={EXAMPLE}"]) == 0
    assert "status: OK" in capsys.readouterr().out
    assert main(["--help"]) == 0


def test_search_timeout_exits_3_without_output(tmp_path, hard_csv):
    out = tmp_path / "out.csv"
    result = run(f"--capacity={PUZZLE.capacity}", f"--input={hard_csv}", "--timeout=300ms", f"--output={out}")
    assert result.returncode == 3, result.stderr
    assert fields(result.stdout)["status"] == "TIMEOUT" and not out.exists()


def _wait_for_the_search(process, seconds: float = 120.0) -> None:
    """Until the exact search kernel is loaded in ``process`` (Linux: its memory map): an
    event, not a guess at how long start-up takes on a loaded machine."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if "_search." in Path(f"/proc/{process.pid}/maps").read_text():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("tela-alloc never started its search")


@pytest.mark.slow
def test_ctrl_c_stops_cleanly(tmp_path, hard_csv):
    out = tmp_path / "out.csv"
    process = subprocess.Popen(  # minimize runs for hours on the puzzle: only the signal ends it
        [sys.executable, "-m", "telamalloc.tools.tela_alloc", "--minimize", f"--input={hard_csv}", f"--output={out}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_the_search(process)  # its handler is installed before the search starts
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    report = fields(stdout)
    assert report["status"] == "OK" and report["optimal"] == "no" and "cancelled" in report["message"]
    assert out.exists()  # minimize always has a valid layout (greedy's) to write


def test_validate_catches_a_corrupted_output(tmp_path, monkeypatch, capsys):
    """Fault injection: the writer puts every buffer at offset 0; --validate must notice."""
    import telamalloc.tools.tela_alloc as cli

    real_write = cli.write_solution
    monkeypatch.setattr(cli, "write_solution", lambda path, problem, offsets, columns: real_write(path, problem, [0] * len(offsets), columns))
    out = tmp_path / "out.csv"
    assert main(["--capacity=12", f"--input={EXAMPLE}", f"--output={out}", "--validate"]) == 4
    assert "tela-alloc: error: the written solution is invalid: buffers 'b" in capsys.readouterr().err


def test_a_timeout_used_up_by_start_up_and_reading_writes_nothing(tmp_path):
    out = tmp_path / "out.csv"
    result = run("--minimize", f"--input={EXAMPLE}", "--timeout=1ms", f"--output={out}")
    assert result.returncode == 3 and not out.exists() and "Traceback" not in result.stderr
    assert fields(result.stdout)["status"] == "TIMEOUT"
    assert "start-up and reading" in result.stdout and "raise --timeout" in result.stdout
    assert f"not written: {out}" in result.stdout


def test_the_timeout_bounds_the_whole_process(tmp_path, monkeypatch, capsys):
    """The solve gets the limit minus start-up and reading, minus the writing and --validate
    budgeted from the reading time (checked with a read that takes a known 0.5 s; no race)."""
    from telamalloc.tools import tela_alloc

    real_read = tela_alloc.read_csv
    clock = {"now": 100.0}
    monkeypatch.setattr(tela_alloc.time, "monotonic", lambda: clock["now"])

    def read_in_half_a_second(path):
        clock["now"] += 0.5
        return real_read(path)

    given = {}

    def solve(problem, arguments):
        given["timeout"] = arguments.timeout
        return real_solve(problem, arguments)

    real_solve = tela_alloc._solve_interruptibly
    monkeypatch.setattr(tela_alloc, "read_csv", read_in_half_a_second)
    monkeypatch.setattr(tela_alloc, "_solve_interruptibly", solve)
    out = tmp_path / "out.csv"
    assert main(["--minimize", f"--input={EXAMPLE}", "--timeout=10s", f"--output={out}", "--validate"]) == 0
    # 10 s - 0.5 s reading - 0.8 x 0.5 s writing - 0.5 s re-reading for --validate
    assert given["timeout"] == pytest.approx(10 - 0.5 - tela_alloc.WRITE_SHARE_OF_READ * 0.5 - 0.5)
    assert out.exists() and "validated:" in capsys.readouterr().out


def test_a_read_longer_than_the_timeout_is_given_up(tmp_path, monkeypatch, capsys):
    from telamalloc.tools import tela_alloc

    def slow_read(path):
        time.sleep(5)
        raise AssertionError("the read should have been given up")

    monkeypatch.setattr(tela_alloc, "read_csv", slow_read)
    out = tmp_path / "out.csv"
    began = time.perf_counter()
    assert main(["--minimize", f"--input={EXAMPLE}", "--timeout=300ms", f"--output={out}"]) == 3
    assert time.perf_counter() - began < 2 and not out.exists()
    assert "start-up and reading" in capsys.readouterr().out


def test_start_up_imports_only_what_a_plain_run_needs():
    # --timeout counts start-up: OR-Tools' cp_model (which pulls pandas), matplotlib, the
    # viewer, the batch, spill and portfolio modules are imported only when used
    code = ("import sys, telamalloc.tools.tela_alloc; "
            "print(sorted(m for m in ('ortools.sat.python.cp_model', 'pandas', 'matplotlib', 'telamalloc.runtime.show.html', "
            "'telamalloc.batch', 'telamalloc.runtime.alloc.spill_choice', 'telamalloc.runtime.alloc.portfolio') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


@pytest.mark.slow
def test_a_numpy_read_problem_is_solved_written_and_validated_from_its_columns(tmp_path):
    lines = ["id,lower,upper,size,alignment"] + [f"{index},{index % 50},{index % 50 + 1 + index % 7},{64 + index},{2 ** (index % 4)}"
                                                  for index in range(5000)]
    source = tmp_path / "big.csv"
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    result = run("--minimize", "--algorithm=large", f"--input={source}", f"--output={out}", "--validate")
    assert result.returncode == 0, result.stderr
    assert "validated:" in result.stdout and "(5000 buffers" in result.stdout
    written = out.read_text().splitlines()
    assert written[0] == "id,lower,upper,size,alignment,offset" and len(written) == 5001
    assert [line.rsplit(",", 1)[0] for line in written[1:]] == lines[1:]  # the input rows, then the offset
