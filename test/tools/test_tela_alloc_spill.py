"""`tela-alloc --spill`: intervals to keep in main memory and the layout of what stays."""

from __future__ import annotations

from pathlib import Path

from telamalloc.tools.tela_alloc import main

PROBLEM = """id,lower,upper,size,uses
a,0,10,4,0w 2 9
b,1,4,4,1w 3
c,2,8,4,2w 5 7
d,4,9,4,4w 8
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "problem.csv"
    path.write_text(text)
    return str(path)


def test_spill_mode_writes_a_validated_layout(tmp_path, capsys):
    output = tmp_path / "pieces.csv"
    status = main(["--spill", f"--input={write(tmp_path, PROBLEM)}", "--capacity=8", f"--output={output}", "--validate"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "spill: a [3, 9) store+load 8 B" in out
    assert "spill: b [2, 3) store+load 8 B" in out
    assert "bytes moved: 16 (2 loads, 2 stores, proved minimal)" in out
    assert "load: 8 (was 12)" in out
    assert "validated:" in out
    rows = output.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,offset"
    assert [row.split(",")[0] for row in rows[1:]] == ["a", "a.1", "b", "b.1", "c", "d"]


def test_an_op_too_large_is_infeasible(tmp_path, capsys):
    assert main(["--spill", f"--input={write(tmp_path, PROBLEM)}", "--capacity=4"]) == 1
    out = capsys.readouterr().out
    assert "status: INFEASIBLE" in out and "point #2 needs '8' bytes" in out


def test_spill_mode_needs_uses_and_a_capacity(tmp_path, capsys):
    plain = write(tmp_path, "id,lower,upper,size\na,0,2,4\n")
    assert main(["--spill", f"--input={plain}", "--capacity=4"]) == 2
    assert "--spill needs a 'uses' column" in capsys.readouterr().err
    assert main(["--spill", f"--input={plain}", "--minimize"]) == 2
    assert "--spill needs --capacity" in capsys.readouterr().err


def test_bad_use_points_are_located(tmp_path, capsys):
    bad = write(tmp_path, "id,lower,upper,size,uses\na,0,4,4,0w 9\n")
    assert main(["--spill", f"--input={bad}", "--capacity=4"]) == 2
    assert "buffer 'a': use point '9' is outside its lifetime [0, 4)" in capsys.readouterr().err
    bad = write(tmp_path, "id,lower,upper,size,uses\na,0,4,4,2 1\n")
    assert main(["--spill", f"--input={bad}", "--capacity=4"]) == 2
    assert "use points must increase" in capsys.readouterr().err


def test_the_uses_column_survives_a_plain_solve(tmp_path, capsys):
    output = tmp_path / "out.csv"
    assert main([f"--input={write(tmp_path, PROBLEM)}", "--capacity=16", f"--output={output}", "--validate"]) == 0
    rows = output.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,uses,offset"
    assert rows[1].startswith("a,0,10,4,0w 2 9,")
