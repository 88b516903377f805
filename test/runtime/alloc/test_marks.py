"""Marked buffers on plain data: persistent buffers and aliases (runtime/alloc/marks.py)."""

from __future__ import annotations

import json

import pytest

from telamalloc import solve
from telamalloc.runtime.alloc.csv_io import read_csv, read_problem, write_problem, write_solution
from telamalloc.runtime.alloc.marks import describe, normalize
from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError
from telamalloc.runtime.alloc.spill_choice import parse_uses, plan_with_spills
from telamalloc.runtime.alloc.validate import compute_load, validate
from telamalloc.tools import tela_alloc

# `kv` is used at point 2 only but holds state: no other buffer may take its bytes, ever.
# `s2` is `s` updated in place: the same bytes, one buffer from 0 to 5.
MARKED = [
    Buffer("kv", 2, 3, 8, persistent=True),
    Buffer("a", 0, 2, 8),
    Buffer("b", 3, 6, 8),
    Buffer("s", 0, 3, 4),
    Buffer("s2", 3, 5, 4, alias_of="s"),
]


def test_buffers_carry_marks_and_unmarked_ones_read_as_before():
    assert Buffer("a", 0, 1, 4) == Buffer("a", 0, 1, 4, persistent=False, alias_of=None)
    assert Buffer("a", 0, 1, 4) != Buffer("a", 0, 1, 4, persistent=True)
    assert repr(Buffer("a", 0, 1, 4)) == "Buffer(id='a', start=0, end=1, size=4, alignment=1, offset=None)"
    assert repr(Buffer("b", 0, 1, 4, alias_of="a")).endswith("offset=None, alias_of='a')")
    assert Problem.from_columns(["a"], [0], [1], [4]).buffers[0].persistent is False


def test_normalize_merges_aliases_and_widens_persistent_buffers():
    marks = normalize(Problem(MARKED, 24))
    assert marks.problem == Problem(
        [Buffer("kv", 0, 6, 8), Buffer("a", 0, 2, 8), Buffer("b", 3, 6, 8), Buffer("s", 0, 5, 4)], 24
    )
    assert marks.group == (0, 1, 2, 3, 3)
    assert marks.persistent == {"kv"} and marks.roots == {"s2": "s"}
    assert marks.offsets([0, 8, 8, 16]) == (0, 8, 8, 16, 16)


def test_an_alias_of_a_persistent_buffer_makes_the_group_persistent_and_chains_are_followed():
    problem = Problem([Buffer("x", 3, 4, 2), Buffer("st", 1, 2, 4, persistent=True, alignment=2),
                       Buffer("st2", 2, 3, 4, alias_of="st", alignment=4), Buffer("st3", 5, 7, 4, alias_of="st2")])
    marks = normalize(problem)
    assert marks.problem.buffers[1] == Buffer("st", 1, 7, 4, 4)
    assert marks.persistent == {"st", "st2", "st3"}
    assert marks.roots == {"st2": "st", "st3": "st"}


@pytest.mark.parametrize("algorithm", ["telamalloc", "large", "best-fit", "first-fit"])
@pytest.mark.parametrize("mode", ["fit", "minimize"])
def test_every_algorithm_honours_the_marks(algorithm, mode):
    problem = Problem(MARKED, 24)
    solution = solve(problem, mode=mode, algorithm=algorithm)
    assert solution.ok and validate(problem, solution.offsets) == []
    offsets = solution.offsets_by_id
    assert offsets["s2"] == offsets["s"]
    kv = range(offsets["kv"], offsets["kv"] + 8)
    assert all(offsets[other] + 8 <= kv.start or offsets[other] >= kv.stop for other in ("a", "b"))
    # Without the marks, `kv`, `a` and `b` share 8 bytes and `s2` may take `s`'s or others: LOAD 12.
    assert solution.load == 20 == compute_load(problem)[0]
    assert solve(Problem([Buffer(b.id, b.start, b.end, b.size) for b in MARKED], 24), mode=mode).load == 12


def test_a_persistent_buffer_that_does_not_fit_is_proved_infeasible():
    problem = Problem([Buffer("kv", 0, 1, 8, persistent=True), Buffer("a", 1, 2, 8), Buffer("b", 2, 3, 8)], 15)
    solution = solve(problem)
    assert not solution.ok and solution.overload is not None and set(solution.overload.buffer_ids) >= {"kv"}
    assert solve(problem.with_capacity(16)).ok


def test_validate_checks_aliases_and_persistent_bytes():
    problem = Problem(MARKED, 24)
    assert validate(problem, [0, 8, 8, 16, 16]) == []
    assert validate(problem, [0, 8, 8, 16, 20]) == ["buffer 's2' aliases 's' but is placed at '20', 's' at '16'"]
    # `a` and `b` at `kv`'s bytes: valid without the mark, not with it.
    assert validate(Problem([Buffer(b.id, b.start, b.end, b.size) for b in MARKED], 24), [0, 0, 0, 8, 12]) == []
    assert validate(problem, [0, 0, 0, 16, 16]) == [
        "buffers 'kv' [0, 8) and 'a' [0, 8) overlap in bytes while both are live at time '0'",
        "buffers 'kv' [0, 8) and 'b' [0, 8) overlap in bytes while both are live at time '3'",
    ]
    assert validate(Problem([Buffer("a", 0, 1, 4, alias_of="z")]), [0]) == [
        "buffer 'a' aliases 'z', which is not a buffer of the problem; name an existing buffer id"
    ]


@pytest.mark.parametrize("buffers, message", [
    ([Buffer("kv", 0, 1, 4, persistent="yes")], "buffer 'kv' has persistent 'yes'; expected True or False"),
    ([Buffer("a", 0, 1, 4, alias_of="a")],
     "buffer 'a' aliases in a cycle ('a' -> 'a'); an alias chain must end at a buffer that aliases nothing"),
    ([Buffer("a", 0, 1, 4), Buffer("b", 1, 2, 8, alias_of="a")],
     "buffer 'b' ('8' bytes) aliases 'a' ('4' bytes); an alias is the same memory: give both the same size"),
    ([Buffer("a", 0, 1, 4, alias_of=["x"])],
     "buffer 'a' aliases '['x']', which is not a buffer of the problem; name an existing buffer id"),
])
def test_bad_marks_are_one_line_problem_errors(buffers, message):
    with pytest.raises(ProblemError) as caught:
        solve(Problem(buffers), mode="minimize")
    assert str(caught.value) == message


def test_csv_round_trip_of_the_marks(tmp_path):
    path = tmp_path / "marked.csv"
    write_problem(path, Problem(MARKED))
    assert path.read_text().splitlines()[:2] == ["id,lower,upper,size,persistent,alias_of", "kv,2,3,8,1,"]
    assert read_problem(path) == Problem(MARKED)
    table = read_csv(path)
    solution = solve(table.problem, capacity=24)
    out = tmp_path / "out.csv"
    write_solution(out, table.problem, solution.offsets, table.columns)
    assert out.read_text().splitlines()[-1] == "s2,3,5,4,0,s,16"
    assert validate(read_problem(out), [int(line.rsplit(",", 1)[1]) for line in out.read_text().splitlines()[1:]]) == []
    # A file without the columns is read as before (columnar, unmarked); empty cells mark nothing.
    plain = tmp_path / "plain.csv"
    plain.write_text("id,lower,upper,size,persistent,alias_of\na,0,1,4,,\n")
    assert read_problem(plain) == Problem([Buffer("a", 0, 1, 4)])


def test_tela_alloc_reports_the_marks(tmp_path, capsys):
    path = tmp_path / "marked.csv"
    write_problem(path, Problem(MARKED))
    assert tela_alloc.main([f"--input={path}", f"--output={tmp_path / 'out.csv'}", "--capacity=24"]) == 0
    out = capsys.readouterr().out
    assert "marks: persistent: kv; aliases: s2 -> s\n" in out and "load: 20\n" in out
    report = tmp_path / "report.json"
    assert tela_alloc.main([f"--input={path}", "--capacity=24", f"--report={report}"]) == 0
    data = json.loads(report.read_text())["reports"][0]
    assert data["persistent"] == ["kv"] and data["aliases"] == {"s2": "s"}
    text = tmp_path / "report.txt"
    assert tela_alloc.main([f"--input={path}", "--capacity=24", f"--report={text}"]) == 0
    assert "  marks:         persistent kv; aliases s2 -> s\n" in text.read_text()
    assert describe(Problem([Buffer("a", 0, 1, 4)])) is None


def test_csv_spill_keeps_marked_buffers_whole(tmp_path, capsys):
    path = tmp_path / "spill.csv"
    path.write_text("id,lower,upper,size,uses,persistent,alias_of\nkv,2,3,8,2w,1,\na,0,6,8,0w 5,,\n"
                    "b,1,4,8,1w 3,0,\ns,0,3,4,0w 2,,\ns2,3,5,4,3w 4,,s\n")
    out = tmp_path / "out.csv"
    assert tela_alloc.main([f"--input={path}", f"--output={out}", "--capacity=12", "--spill"]) == 1
    assert ("message: point #0 needs '20' bytes for the buffers in use there but the target is '12'; live there: kv a s; "
            "marked, never spilled: 'kv' (persistent), 's' (aliased)") in capsys.readouterr().out
    table = read_csv(path)
    plan = plan_with_spills(table.problem, [parse_uses(cell, "") for cell in table.uses], 20)
    assert plan.solution.ok and [(g.lo, g.hi) for g in plan.choice.gaps] == [(1, 5)]  # only `a` moves
    assert {b.id for b in plan.pieces.buffers} == {"kv", "a", "a.1", "b", "s", "s2"}
    assert validate(plan.pieces, plan.solution.offsets) == []
    offsets = plan.solution.offsets_by_id
    assert offsets["s"] == offsets["s2"]
    assert tela_alloc.main([f"--input={path}", f"--output={out}", "--capacity=20", "--spill"]) == 0
