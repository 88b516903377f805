"""CSV reading (MiniMalloc's format, every error class with file:line) and atomic writing."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from telamalloc.runtime.alloc.csv_io import CsvError, read_csv, read_problem, write_problem, write_solution
from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError, columns_of

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "input.12.csv"


def write(tmp_path, text, name="p.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_reads_the_minimalloc_example():
    problem = read_problem(EXAMPLE, capacity=12)
    assert problem.capacity == 12
    assert problem.buffers[0] == Buffer("b1", 0, 3, 4)
    assert [b.id for b in problem.buffers] == ["b1", "b2", "b3", "b4", "b5"]


def test_columns_by_name_in_any_order_with_optional_columns(tmp_path):
    path = write(tmp_path, "size,upper,id,lower,alignment,offset\n8,5,x,1,4,16\n\n")
    table = read_csv(path)
    assert table.columns == ("size", "upper", "id", "lower", "alignment", "offset")
    assert table.problem.buffers == (Buffer("x", 1, 5, 8, 4, 16),)


def test_an_empty_offset_cell_leaves_that_buffer_free(tmp_path):
    path = write(tmp_path, "id,lower,upper,size,offset\npinned,0,3,4,8\nfree,0,3,4,\nblank,1,2,4,  \n")
    assert read_problem(path).buffers == (Buffer("pinned", 0, 3, 4, 1, 8), Buffer("free", 0, 3, 4), Buffer("blank", 1, 2, 4))


def test_write_problem_refuses_two_ids_of_one_text_and_writes_nothing(tmp_path):
    """`1` and `"1"` are two ids in Python and one in the CSV: read back, the file would name
    one buffer twice, so nothing is written; ids of several types that differ are fine."""
    target = tmp_path / "p.csv"
    with pytest.raises(ProblemError, match="buffers 1 and '1' are both named '1'"):
        write_problem(target, Problem([Buffer(1, 0, 2, 8), Buffer("1", 1, 3, 8)]))
    assert not target.exists()
    write_problem(target, Problem([Buffer(1, 0, 2, 8), Buffer("a", 1, 3, 8)]))
    assert [buffer.id for buffer in read_problem(target).buffers] == ["1", "a"]


@pytest.mark.parametrize(
    "buffers, header",
    [
        ((Buffer("a", 0, 3, 4), Buffer("b", 2, 5, 8)), "id,lower,upper,size"),
        ((Buffer("a", 0, 3, 4, 16), Buffer("b", 2, 5, 8)), "id,lower,upper,size,alignment"),
        ((Buffer("a", 0, 3, 4, 1, 8), Buffer("b", 2, 5, 8)), "id,lower,upper,size,offset"),
        ((Buffer("a", 0, 3, 4, 1, 8), Buffer("b", 2, 5, 8, 4, 0)), "id,lower,upper,size,alignment,offset"),
    ],
)
def test_write_problem_round_trips_with_only_the_columns_needed(tmp_path, buffers, header):
    path = tmp_path / "p.csv"
    write_problem(path, Problem(buffers))
    assert path.read_text().splitlines()[0] == header
    assert read_problem(path).buffers == buffers


def test_inclusive_begin_end_converts_to_half_open(tmp_path):
    path = write(tmp_path, "id,begin,end,size\na,0,0,4\nb,1,3,4\n")
    assert read_problem(path).buffers == (Buffer("a", 0, 1, 4), Buffer("b", 1, 4, 4))


def test_csv_error_is_a_problem_error():
    assert issubclass(CsvError, ProblemError)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "p.csv:1: empty file; expected a header 'id,lower,upper,size'"),
        ("id,lower,size\n", "p.csv:1: missing column 'upper'; the header needs 'id,lower,upper,size'"),
        ("id,begin,size\n", "p.csv:1: missing column 'end'; the header needs 'id,begin,end,size'"),
        ("id,lower,upper,size,colour\n", "p.csv:1: unknown column 'colour' (column 5)"),
        ("id,lower,upper,size,size\n", "p.csv:1: column 'size' appears twice"),
        ("id,lower,upper,begin,size\n", "p.csv:1: mixes 'lower'/'upper' with 'begin'/'end'"),
        ("id,lower,upper,size\na,0,2,4\nb,0,x,4\n", "p.csv:3: 'upper' is 'x', expected an integer"),
        ("id,lower,upper,size\na,0,2,1_000\n", "p.csv:2: 'size' is '1_000', expected an integer"),
        ("id,lower,upper,size\na,0,2,4.5\n", "p.csv:2: 'size' is '4.5', expected an integer"),
        ("id,lower,upper,size\na,0,2,-4\n", "p.csv:2: 'size' is negative ('-4')"),
        ("id,lower,upper,size\na,3,3,4\n", "p.csv:2: 'upper' '3' <= 'lower' '3'; lifetimes are half-open"),
        ("id,begin,end,size\na,3,2,4\n", "p.csv:2: 'end' '2' < 'begin' '3'; 'end' is inclusive"),
        ("id,lower,upper,size,alignment\na,0,2,4,6\n", "p.csv:2: 'alignment' is '6', expected a power of two"),
        ("id,lower,upper,size,alignment\na,0,2,4,0\n", "p.csv:2: 'alignment' is '0', expected a power of two"),
        ("id,lower,upper,size\na,0,2,4\n\na,1,2,4\n", "p.csv:4: duplicate id 'a' (first on line 2)"),
        ("id,lower,upper,size\na,0,2,9223372036854775808\n", "p.csv:2: 'size' is '9223372036854775808', beyond the 64-bit limit"),
        ("id,lower,upper,size,offset\na,0,2,8,9223372036854775800\n", "p.csv:2: 'offset' + 'size' is '9223372036854775808', beyond the 64-bit limit"),
        ("id,begin,end,size\na,0,9223372036854775807,4\n", "p.csv:2: 'end' is '9223372036854775807', too large"),
        ("id,lower,upper,size\na,0,2\n", "p.csv:2: has '3' fields but the header has '4'"),
        ("id,lower,upper,size\n,0,2,4\n", "p.csv:2: empty 'id'"),
        (b"id,lower,upper,size\na,0,2,4\n\xff\xfe,1,2,3\n", "p.csv:3: not UTF-8 text (byte '0xff')"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "p.csv:1: binary data (a NUL byte)"),
    ],
)
def test_errors_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(CsvError) as error:
        read_problem(path)
    assert str(error.value).startswith(str(tmp_path / "p.csv") + message[len("p.csv"):])


def test_missing_file(tmp_path):
    with pytest.raises(CsvError, match="cannot read"):
        read_problem(tmp_path / "nope.csv")


def test_round_trip_keeps_columns_ids_and_order(tmp_path):
    path = write(tmp_path, "size,id,begin,end,alignment\n8,x,1,4,4\n2,007,0,0,1\n")
    table = read_csv(path)
    out = tmp_path / "out.csv"
    write_solution(out, table.problem, [4, 0], table.columns)
    assert out.read_text() == "size,id,begin,end,alignment,offset\n8,x,1,4,4,4\n2,007,0,0,1,0\n"
    again = read_csv(out)
    assert [b.id for b in again.problem.buffers] == ["x", "007"]
    assert [b.offset for b in again.problem.buffers] == [4, 0]
    assert [b.end for b in again.problem.buffers] == [5, 1]


def test_default_columns_add_alignment_only_when_used(tmp_path):
    out = tmp_path / "out.csv"
    write_solution(out, read_problem(EXAMPLE), [8, 8, 4, 4, 0])
    assert out.read_text().splitlines()[:2] == ["id,lower,upper,size,offset", "b1,0,3,4,8"]
    write_solution(out, read_problem(EXAMPLE).__class__([Buffer("a", 0, 1, 4, 8)]), [0])
    assert out.read_text() == "id,lower,upper,size,alignment,offset\na,0,1,4,8,0\n"


def test_write_is_atomic_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("old contents\n")
    with pytest.raises(ValueError, match="one offset per buffer"):
        write_solution(out, read_problem(EXAMPLE), [0])
    assert out.read_text() == "old contents\n"
    write_solution(out, read_problem(EXAMPLE), [8, 8, 4, 4, 0])
    assert sorted(os.listdir(tmp_path)) == ["out.csv"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("seed", range(20))
def test_random_round_trip(tmp_path, seed):
    import random

    rng = random.Random(seed)
    buffers = []
    for i in range(rng.randint(0, 30)):
        start = rng.randint(0, 2**40)
        offset = rng.choice([None, rng.randint(0, 2**50)])
        buffers.append(Buffer(f"id {i}, \"q\"", start, start + rng.randint(1, 99), rng.randint(0, 2**40), 2 ** rng.randint(0, 12), offset))
    problem = read_problem(EXAMPLE).__class__(buffers)
    offsets = [rng.randint(0, 2**50) for _ in buffers]
    out = tmp_path / "out.csv"
    write_solution(out, problem, offsets)
    again = read_problem(out)
    assert [(b.id, b.start, b.end, b.size, b.alignment) for b in again.buffers] == [(b.id, b.start, b.end, b.size, b.alignment) for b in buffers]
    assert [b.offset for b in again.buffers] == offsets


def _slow(monkeypatch, path):
    """read_csv through the row-by-row reader only."""
    from telamalloc.runtime.alloc import csv_io

    with monkeypatch.context() as patch:
        patch.setattr(csv_io, "_read_fast", lambda name, data: None)
        return read_csv(path)


@pytest.mark.parametrize("seed", range(6))
def test_numpy_path_reads_what_the_row_reader_reads(tmp_path, monkeypatch, seed):
    import random

    from telamalloc.runtime.alloc import csv_io

    rng = random.Random(seed)
    inclusive = seed % 2 == 1
    columns = ["id", "begin", "end", "size"] if inclusive else ["id", "lower", "upper", "size"]
    columns += ["alignment", "offset"][: seed % 3]
    rng.shuffle(columns)
    lines = [",".join(columns)]
    for index in range(rng.randrange(1, 300)):
        start = rng.randrange(0, 10**rng.randrange(1, 18))
        values = {"id": f"b{index}", "lower": start, "upper": start + rng.randrange(1, 50), "begin": start,
                  "end": start + rng.randrange(0, 50), "size": rng.randrange(0, 10**6), "alignment": 2 ** rng.randrange(0, 9),
                  "offset": rng.choice(["", rng.randrange(0, 10**6)])}
        lines.append(",".join(str(values[column]) for column in columns))
    path = write(tmp_path, "\n".join(lines) + "\n")
    taken = []
    fast_reader = csv_io._read_fast
    monkeypatch.setattr(csv_io, "_read_fast", lambda name, data: taken.append(name) or fast_reader(name, data))
    fast = read_csv(path)
    assert taken and fast_reader(str(path), path.read_bytes()) is not None  # the numpy path read it
    assert columns_of(fast.problem) is not None  # as columns, no Buffer per row
    slow = _slow(monkeypatch, path)
    assert fast == slow
    offsets = [index * 10**6 for index in range(len(slow.problem.buffers))]
    write_solution(tmp_path / "fast.csv", fast.problem, offsets, fast.columns)
    write_solution(tmp_path / "slow.csv", slow.problem, offsets, slow.columns)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "slow.csv").read_bytes()  # numpy's text is the csv writer's


@pytest.mark.parametrize("ids", [
    [str(index) for index in range(40)],  # canonical decimal ids: kept as numbers
    [str(index) for index in range(40, 0, -1)],
    ["007", "7", "70"],  # a leading zero: text
    ["+5", "5"],  # a sign: text
    ["12", "12a", "3"],  # digits first, not a number
    ["1", "2", "1"],  # duplicates: the row reader's error
    ["a", "bb", "a b", "c/d:0", "x" * 40],  # ASCII text ids of different lengths: cut out of the bytes
    ["a", "\tb", "c"],  # a tab before an id: stripped by the row reader
    ["a", "b\x0b", "c"],
    ["a", "bb", "a"],
    ["é", "e", "ü"],  # not ASCII: taken as text
])
def test_decimal_ids_read_and_write_as_the_row_reader_does(tmp_path, monkeypatch, ids):
    path = write(tmp_path, "id,lower,upper,size\n" + "".join(f"{i},{n},{n + 2},{n + 1}\n" for n, i in enumerate(ids)))
    try:
        slow = _slow(monkeypatch, path)
    except CsvError as error:
        with pytest.raises(CsvError, match=re.escape(str(error))):  # the same file:line: message
            read_csv(path)
        return
    fast = read_csv(path)
    assert fast == slow and [b.id for b in fast.problem.buffers] == [i.strip() for i in ids]
    offsets = [10 * index for index in range(len(ids))]
    write_solution(tmp_path / "fast.csv", fast.problem, offsets, fast.columns)
    write_solution(tmp_path / "slow.csv", slow.problem, offsets, slow.columns)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "slow.csv").read_bytes()


@pytest.mark.parametrize("text", [
    "id,lower,upper,size\r\na,0,2,4\r\nb,1,3,4\r\n",  # CRLF
    "id,lower,upper,size\n a ,0,2,4\nb, 1,3 ,4\n",  # spaces around cells
    'id,lower,upper,size\n"a,1",0,2,4\nb,1,3,4\n',  # a quoted id
    "id,lower,upper,size\na,+0,2,4\nb,1,3,4\n",  # a sign
    "id,lower,upper,size\na,0,2,4\n\nb,1,3,4\n\n",  # blank lines
    " id , lower,upper,size\na,0,2,4\n",  # spaces in the header
    "id,lower,upper,size\na,0,2,4",  # no final newline
    "id,lower,upper,size,offset\na,0,2,4,\nb,1,3,4,8\n",  # an empty offset
])
def test_unusual_files_read_the_same_either_way(tmp_path, monkeypatch, text):
    path = write(tmp_path, text)
    assert read_csv(path) == _slow(monkeypatch, path)


def test_numpy_path_columns_feed_solve_and_validate(tmp_path):
    from telamalloc import solve
    from telamalloc.runtime.alloc import validate as checker

    path = write(tmp_path, "id,lower,upper,size,alignment\na,0,2,4,1\nb,1,3,4,4\nc,2,4,8,2\n")
    problem = read_csv(path).problem
    assert columns_of(problem) is not None and "buffers" not in vars(problem)  # columns, no Buffer objects yet
    solution = solve(problem, mode="minimize")
    assert solution.ok and solution.peak == 12 and checker.validate(problem, solution.offsets) == []


@pytest.mark.parametrize("ids", [["a", "b", "c"], ["a,b", "b", "c"], ['q"', "b", "c"], [1, 2, 3]])
def test_column_writer_writes_what_the_csv_writer_writes(tmp_path, monkeypatch, ids):
    from telamalloc.runtime.alloc import csv_io

    problem = Problem([Buffer(ids[0], 0, 2, 4), Buffer(ids[1], 1, 3, 4, 4), Buffer(ids[2], 2, 4, 8, 2, 16)])
    for columns in (None, ("id", "begin", "end", "size", "alignment", "offset"), ("size", "id", "upper", "lower")):
        write_solution(tmp_path / "fast.csv", problem, [0, 4, 16], columns)
        with monkeypatch.context() as patch:
            patch.setattr(csv_io, "_solution_text", lambda *arguments: None)
            write_solution(tmp_path / "slow.csv", problem, [0, 4, 16], columns)
        assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "slow.csv").read_bytes()


def test_a_uses_column_of_plain_numbers_is_kept_as_text(tmp_path):
    # single use points look like integers: the numpy path must not take the column for a number
    path = tmp_path / "uses.csv"
    path.write_text("id,lower,upper,size,uses\na,0,4,8,0\nb,1,3,8,2\n")
    table = read_csv(path)
    assert table.uses == ("0", "2")
    out = tmp_path / "out.csv"
    write_solution(out, table.problem, [0, 8], table.columns, uses=table.uses)
    assert out.read_text() == "id,lower,upper,size,uses,offset\na,0,4,8,0,0\nb,1,3,8,2,8\n"


def test_format_rows_matches_python_formatting():
    """The C row formatter of the fast writer, against Python's own: numbers of every
    digit count (0 and 2^63 - 1 included), text cells of any length (empty too)."""
    from telamalloc.runtime.alloc._csvtext import format_rows

    rng = np.random.default_rng(3)
    count = 500
    numbers = np.concatenate(([0, 9, 10, 2**63 - 1], rng.integers(0, 10 ** rng.integers(1, 19, count - 4), dtype=np.int64)))
    words = ["".join(chr(97 + int(c)) for c in rng.integers(0, 26, int(rng.integers(0, 7)))) for _ in range(count)]
    text = ("".join(words).encode("ascii"), np.array([len(word) for word in words], dtype=np.int64))
    got = format_rows([numbers, text, numbers[::-1].copy()], count)
    want = "".join(f"{a},{w},{b}\n" for a, w, b in zip(numbers.tolist(), words, numbers[::-1].tolist())).encode("ascii")
    assert got == want
    assert format_rows([], 0) == b""
    assert format_rows([np.zeros(0, dtype=np.int64)], 0) == b""


def test_format_rows_rejects_bad_cells():
    from telamalloc.runtime.alloc._csvtext import format_rows

    with pytest.raises(ValueError, match="non-negative"):
        format_rows([np.array([1, -1], dtype=np.int64)], 2)
    with pytest.raises(ValueError, match="one per row"):
        format_rows([np.array([1], dtype=np.int64)], 2)
    with pytest.raises(ValueError, match="lengths"):
        format_rows([(b"abc", np.array([1, 1], dtype=np.int64))], 2)
