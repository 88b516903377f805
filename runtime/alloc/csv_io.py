"""Problems and solutions as CSV files, in MiniMalloc's format.

Reading: a header row is required; columns are found by name, in any order:
- ``id,lower,upper,size``: the buffer is live for ``lower <= t < upper`` (half-open);
- or ``id,begin,end,size`` with ``end`` INCLUSIVE (as XLA, TFLite and IREE dump them):
  ``upper = end + 1``;
- optional ``alignment`` (a power of two, default 1) and ``offset`` (pins the buffer; an
  empty ``offset`` cell leaves that buffer free, so a file can pin some buffers only);
- optional ``uses``: the buffer's use points for spilling, kept as text here
  (``CsvTable.uses``) and parsed by ``telamalloc.runtime.alloc.spill_choice.parse_uses``.
- optional ``location``, informational (``file:line:col`` of the allocating op, written by
  ``tela-plan{layout=...}``): read and ignored.
- optional marks (``runtime/alloc/marks.py``): ``persistent`` (``1``: live over the whole
  problem, never reused; ``0`` or empty: not) and ``alias_of`` (the id of the buffer whose
  bytes this one is; empty: none).
Ids are kept as the strings found in the file. Blank lines are skipped. Every error is a
``CsvError`` whose message starts with ``file:line:``.

Speed: the common file (no quotes, no blank lines, plain decimal numbers of at most 18
digits, unique ids without surrounding spaces, every row valid) is parsed with numpy in one
pass, building no object per row; anything else, or any doubt, goes through the
row-by-row reader, which words the exact ``file:line:`` error. Both give the same problem.
The columns parsed by numpy are handed to the validator's column cache, so that solve() and
validate() do not read the buffers again.

Writing: the columns of the input (or MiniMalloc's four) plus ``offset``, ids unchanged,
written to a temporary file in the same directory and moved into place with ``os.replace``,
so a reader never sees half a file.
"""

from __future__ import annotations

import csv
import io
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from telamalloc.files import write_atomically
from telamalloc.runtime.alloc.checks import check_id_texts
from telamalloc.runtime.alloc.marks import has_marks, normalize
from telamalloc.runtime.alloc.problem import INT64_MAX, Buffer, Problem, ProblemError, columns_of

HALF_OPEN_COLUMNS = ("id", "lower", "upper", "size")
INCLUSIVE_COLUMNS = ("id", "begin", "end", "size")
OPTIONAL_COLUMNS = ("alignment", "offset", "uses", "location", "persistent", "alias_of")  # `location`: informational, ignored when read
TEXT_COLUMNS = ("uses", "location", "alias_of")  # cells that are not integers: the row reader and the csv writer handle them
MARK_COLUMNS = ("persistent", "alias_of")  # the marks (`runtime/alloc/marks.py`): written when any buffer has one
KNOWN_COLUMNS = frozenset(HALF_OPEN_COLUMNS + INCLUSIVE_COLUMNS + OPTIONAL_COLUMNS)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class CsvError(ProblemError):
    """A CSV file that is not a valid problem; the message starts with ``file:line:``."""


@dataclass(frozen=True)
class CsvTable:
    problem: Problem
    columns: tuple[str, ...]  # the header of the file, in file order
    uses: tuple[str, ...] | None = None  # the `uses` cells, one per buffer (None: no such column)


def _fail(path: str, line: int, message: str) -> CsvError:
    return CsvError(f"{path}:{line}: {message}")


def _show(text: str, limit: int = 60) -> str:
    """A field as it goes into a one-line message: control characters escaped, long text cut."""
    shown = _CONTROL.sub(lambda match: repr(match.group())[1:-1], text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _decode(path: str, data: bytes) -> str:
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise _fail(path, line, "binary data (a NUL byte); expected a CSV text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise _fail(path, line, f"not UTF-8 text (byte '0x{data[error.start]:02x}'); save the file as UTF-8") from None


def _choose_columns(path: str, header: list[str]) -> tuple[str, str]:
    """Return the names of the lifetime columns, or fail naming what is wrong."""
    for position, name in enumerate(header):
        if name not in KNOWN_COLUMNS:
            expected = ", ".join(f"'{column}'" for column in sorted(KNOWN_COLUMNS))
            raise _fail(path, 1, f"unknown column '{name}' (column {position + 1}); expected only {expected}")
        if header.count(name) > 1:
            raise _fail(path, 1, f"column '{name}' appears twice")
    half_open = "lower" in header or "upper" in header
    inclusive = "begin" in header or "end" in header
    if half_open and inclusive:
        raise _fail(path, 1, "mixes 'lower'/'upper' with 'begin'/'end'; use one lifetime convention")
    required = INCLUSIVE_COLUMNS if inclusive else HALF_OPEN_COLUMNS
    missing = [name for name in required if name not in header]
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        raise _fail(path, 1, f"missing column {names}; the header needs '{','.join(required)}'")
    return (required[1], required[2])


def _integer(path: str, line: int, column: str, text: str) -> int:
    if not _INTEGER.fullmatch(text.strip()):
        raise _fail(path, line, f"'{column}' is '{_show(text)}', expected an integer")
    value = int(text.strip(), 10)
    if value < 0:
        raise _fail(path, line, f"'{column}' is negative ('{value}')")
    if value > INT64_MAX:
        raise _fail(path, line, f"'{column}' is '{value}', beyond the 64-bit limit '{INT64_MAX}'")
    return value


def read_csv(path: str | os.PathLike) -> CsvTable:
    """Read a problem (capacity None) and the file's header; raise CsvError on any defect."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as error:
        raise CsvError(f"{name}: cannot read: {error.strerror or error}") from None
    if data.isascii() and b"\x00" not in data:  # the common file: no need to decode it first
        fast = _read_fast(name, data)
        if fast is not None:
            return fast
    text = _decode(name, data)
    if not data.isascii():
        fast = _read_fast(name, data)
        if fast is not None:
            return fast
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(rows, None)
    except csv.Error as error:
        raise _fail(name, 1, f"malformed CSV: {error}") from None
    if header is None or not any(cell.strip() for cell in header):
        raise _fail(name, 1, f"empty file; expected a header '{','.join(HALF_OPEN_COLUMNS)}'")
    header = [cell.strip() for cell in header]
    lower_name, upper_name = _choose_columns(name, header)
    position = {column: index for index, column in enumerate(header)}

    buffers: list[Buffer] = []
    uses: list[str] = []
    seen: dict[str, int] = {}
    record_end = rows.line_num
    try:
        for row in rows:
            # A record may span lines (a quoted newline): report the line where it starts.
            line, record_end = record_end + 1, rows.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise _fail(name, line, f"has '{len(row)}' fields but the header has '{len(header)}'")
            buffers.append(_buffer(name, line, row, position, lower_name, upper_name, seen))
            if "uses" in position:
                uses.append(row[position["uses"]].strip())
    except csv.Error as error:
        raise _fail(name, rows.line_num, f"malformed CSV: {error}") from None
    problem = Problem(buffers)
    if has_marks(problem):  # a bad mark is located at the row of the buffer it blames
        try:
            normalize(problem)
        except ProblemError as error:
            raise _fail(name, seen[error.buffer_id], str(error)) from None  # type: ignore[attr-defined]
    return CsvTable(problem, tuple(header), tuple(uses) if "uses" in position else None)


_QUARTER = 2**61  # values up to this are far from every 64-bit limit (sums of two stay within)
_POW10 = 10 ** np.arange(19, dtype=np.int64)  # 10^0 .. 10^18


def _read_fast(name: str, data: bytes) -> CsvTable | None:
    """The table of a common, valid file as a columnar Problem (no Buffer per row), parsed
    with numpy; None for anything unusual (the row reader then decides and words the error).

    The line structure (every row has as many fields as the header, no blank line) is
    checked on the bytes; the integer columns are parsed by ``np.loadtxt`` (numpy's C
    parser: exact int64, and it rejects exactly what is not an optionally signed decimal
    integer, which is what the row reader accepts too); ids that are all canonical decimal
    numbers (``0``, ``17``: no sign, no leading zero, no space) are kept as int64 and made
    strings only when asked for, other ids are taken as text. ``data`` is valid UTF-8."""
    lines = _fast_lines(name, data)
    if lines is None:
        return None
    header, names = lines.header, lines.names
    numeric = [position for position, column in enumerate(header) if column not in ("id", "offset")]
    parsed = _fast_numbers(lines, numeric)
    if parsed is None:
        return None
    table, numbers = parsed
    ids = None
    if numbers is None:
        ids = lines.ids()
        if ids is None:
            return None
    values = {header[position]: table[:, index] for index, position in enumerate(numeric)}
    columns = _fast_columns(lines, values, names)
    if columns is None:
        return None
    if ids is None:
        problem = Problem.from_decimal_ids(numbers, columns)
    else:
        problem = Problem.from_columns(ids, columns["starts"], columns["ends"], columns["sizes"], columns["aligns"],
                                       columns["pins"])
    return CsvTable(problem, tuple(header))


@dataclass
class _Lines:
    """The cells of a file's body, located on its bytes: row ``r``'s cell ``k`` is
    ``raw[low:high]`` with ``(low, high) = span(k)`` (arrays over the rows)."""

    header: list[str]
    names: tuple[str, str]  # the lifetime columns: (lower, upper) or (begin, end)
    body: bytes
    raw: np.ndarray
    line_starts: np.ndarray
    line_ends: np.ndarray
    commas: np.ndarray  # rows x (width - 1)
    ascii: bool  # the file is ASCII (ids read from the bytes)

    @property
    def rows(self) -> int:
        return len(self.line_starts)

    def span(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        width = len(self.header)
        low = self.line_starts if position == 0 else self.commas[:, position - 1] + 1
        high = self.line_ends if position == width - 1 else self.commas[:, position]
        return low, high

    def ids(self) -> tuple[str, ...] | None:
        """The ids as text (None: a cell the row reader must judge)."""
        position = self.header.index("id")
        if self.ascii:
            return _ascii_ids(self.raw, *self.span(position))
        return _text_ids(self.body.decode("utf-8"), position, self.rows)


def _fast_lines(name: str, data: bytes) -> _Lines | None:
    """The header and the located cells of ``data``, or None when the file is unusual (a
    quote, a lone CR, text columns, a line with another number of fields, no rows)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b'"' in data:
        return None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            return None
    split = data.find(b"\n")
    if split < 0:
        return None
    header = [cell.strip() for cell in data[:split].decode("utf-8").split(",")]
    if any(column in header for column in (*TEXT_COLUMNS, "persistent")):  # text cells and marks: the row reader handles them
        return None
    try:
        names = _choose_columns(name, header)
    except CsvError:
        return None
    body = data[split + 1 :]
    if body.endswith(b"\n"):
        body = body[:-1]
    if not body:
        return None
    width = len(header)
    raw = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(raw == 10)
    rows = len(newlines) + 1
    line_starts = np.concatenate(([0], newlines + 1))
    line_ends = np.append(newlines, len(raw))
    commas = np.flatnonzero(raw == 44)
    if len(commas) != rows * (width - 1) or np.any(line_ends <= line_starts):
        return None
    commas = commas.reshape(rows, width - 1)
    # sorted commas, as many as rows x (width - 1): each row has its share iff each block
    # of width - 1 lies within its line
    if np.any(commas[:, 0] < line_starts) or np.any(commas[:, -1] >= line_ends):
        return None
    return _Lines(header, names, body, raw, line_starts, line_ends, commas, data.isascii())


def _fast_numbers(lines: _Lines, numeric: list[int]) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(the integer columns at ``numeric``, the ids as int64 when they are all canonical
    decimal numbers and unique, else None); None when a cell is not an integer."""
    id_position = lines.header.index("id")
    id_low, id_high = lines.span(id_position)
    raw = lines.raw
    first_bytes = raw[np.minimum(id_low, len(raw) - 1)]
    decimal_ids = bool(np.all((id_high > id_low) & (first_bytes >= 48) & (first_bytes <= 57)))
    table = numbers = None
    if decimal_ids:
        table = _loadtxt(lines.body, [id_position] + numeric)
        if table is not None:
            numbers = table[:, 0]
            digits = np.maximum(np.searchsorted(_POW10, numbers, side="right"), 1)  # 0 has one digit
            decimal_ids = bool(np.all(numbers >= 0) and np.all(digits == id_high - id_low))
            table = table[:, 1:]
        else:
            decimal_ids = False
    if table is None:
        table = _loadtxt(lines.body, numeric)
        if table is None:
            return None
    if table.shape != (lines.rows, len(numeric)):
        return None
    if not decimal_ids:
        return table, None
    ordered = np.sort(numbers)
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    return table, numbers


def _fast_columns(lines: _Lines, values: dict[str, np.ndarray], names: tuple[str, str]) -> dict[str, np.ndarray] | None:
    """The kernel columns (starts, ends, sizes, aligns, pins) of the parsed values, half-open;
    None when a value is out of range (the row reader words the error)."""
    rows, header = lines.rows, lines.header
    if "offset" in header:
        pins = _pins(lines.raw, *lines.span(header.index("offset")))
        if pins is None:
            return None
    else:
        pins = np.full(rows, -1, dtype=np.int64)
    for column in values.values():
        if column.min() < 0 or column.max() > _QUARTER:
            return None
    if pins.max() > _QUARTER:
        return None
    lower_name, upper_name = names
    starts, ends, sizes = values[lower_name], values[upper_name], values["size"]
    if upper_name == "end":
        if np.any(ends < starts):
            return None
        ends = ends + 1
    elif np.any(ends <= starts):
        return None
    aligns = values.get("alignment")
    if aligns is None:
        aligns = np.ones(rows, dtype=np.int64)
    elif np.any(aligns < 1) or np.any(aligns & (aligns - 1)):
        return None
    return {name: np.ascontiguousarray(array) for name, array in
            (("starts", starts), ("ends", ends), ("sizes", sizes), ("aligns", aligns), ("pins", pins))}


def _loadtxt(body: bytes, positions: list[int]) -> np.ndarray | None:
    """The integer columns at ``positions`` of every line of ``body`` (UTF-8), or None when
    a cell is not an integer within 64 bits."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. a future deprecation of some spelling: let the row reader decide
            return np.loadtxt(io.BytesIO(body), delimiter=",", dtype=np.int64, usecols=positions, ndmin=2,
                              comments=None, quotechar=None, encoding="utf-8")
    except (ValueError, OverflowError, Warning):
        return None


_SPACES = np.frombuffer(b" \t\x0b\x0c\x1c\x1d\x1e\x1f", dtype=np.uint8)  # what str.strip() strips in ASCII (no \n, \r here)


def _ascii_ids(raw: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[str, ...] | None:
    """The ``id`` cells of an ASCII file, cut out of the bytes with numpy (a fixed-width
    byte matrix, cast to strings), or None when one is empty, has surrounding spaces or
    appears twice."""
    lengths = high - low
    if lengths.min() < 1:
        return None
    if np.isin(raw[low], _SPACES).any() or np.isin(raw[high - 1], _SPACES).any():
        return None
    width = int(lengths.max())
    matrix = np.empty((len(lengths), width), dtype=np.uint8)
    last = len(raw) - 1
    for place in range(width):  # one gather per byte position of the cells
        matrix[:, place] = np.where(place < lengths, raw[np.minimum(low + place, last)], 0)
    cells = matrix.view(f"S{width}").ravel()  # no NUL in the file: the padding is all a cell loses
    ordered = np.sort(cells)
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    return tuple(cells.astype(f"U{width}").tolist())


def _text_ids(text: str, position: int, rows: int) -> tuple[str, ...] | None:
    """The ``id`` cells of every line, or None when one is empty or has surrounding spaces."""
    pattern = re.compile("^" + "[^,\n]*," * position + "([^,\n]*)", re.MULTILINE)
    ids = tuple(pattern.findall(text))
    if len(ids) != rows or "" in ids or len(set(ids)) != rows:
        return None
    if any(identifier != identifier.strip() for identifier in ids):
        return None
    return ids


def _pins(raw: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray | None:
    """The ``offset`` cells as int64 (-1 for an empty cell), or None unless each is empty
    or plain decimal digits (at most 18)."""
    lengths = high - low
    count = len(lengths)
    if lengths.max() > 18:
        return None
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    pins = np.full(count, -1, dtype=np.int64)
    if total == 0:
        return pins
    flat = np.arange(total, dtype=np.int64)
    digits = raw[np.repeat(low - (ends - lengths), lengths) + flat].astype(np.int64) - 48
    if digits.min() < 0 or digits.max() > 9:
        return None
    weighted = digits * _POW10[np.repeat(ends, lengths) - flat - 1]
    given = lengths > 0
    pins[given] = np.add.reduceat(weighted, (ends - lengths)[given])
    return pins


def _buffer(path, line, row, position, lower_name, upper_name, seen) -> Buffer:
    identifier = row[position["id"]].strip()
    if not identifier:
        raise _fail(path, line, "empty 'id'")
    if identifier in seen:
        raise _fail(path, line, f"duplicate id '{_show(identifier)}' (first on line {seen[identifier]})")
    seen[identifier] = line
    values = {
        column: _integer(path, line, column, row[index])
        for column, index in position.items()
        if column not in ("id", *TEXT_COLUMNS) and not (column in ("offset", "persistent") and not row[index].strip())  # empty: not pinned, not persistent
    }
    start = values[lower_name]
    end = values[upper_name]
    if upper_name == "end":
        if end < start:
            raise _fail(path, line, f"'end' '{end}' < 'begin' '{start}'; 'end' is inclusive")
        end += 1
        if end > INT64_MAX:
            raise _fail(path, line, f"'end' is '{end - 1}', too large to convert to a half-open lifetime")
    elif end <= start:
        raise _fail(path, line, f"'upper' '{end}' <= 'lower' '{start}'; lifetimes are half-open [lower, upper)")
    alignment = values.get("alignment", 1)
    if alignment < 1 or alignment & (alignment - 1):
        raise _fail(path, line, f"'alignment' is '{alignment}', expected a power of two")
    offset = values.get("offset")
    if offset is not None and offset + values["size"] > INT64_MAX:
        raise _fail(path, line, f"'offset' + 'size' is '{offset + values['size']}', beyond the 64-bit limit")
    persistent = values.get("persistent", 0)
    if persistent not in (0, 1):
        raise _fail(path, line, f"'persistent' is '{persistent}', expected 1 (persistent) or 0 (not)")
    alias_of = row[position["alias_of"]].strip() if "alias_of" in position else ""
    return Buffer(identifier, start, end, values["size"], alignment, offset, persistent=persistent == 1, alias_of=alias_of or None)


def read_problem(path: str | os.PathLike, capacity: int | None = None) -> Problem:
    """Read a problem from a CSV file (see the module docstring); raise CsvError on defects."""
    return read_csv(path).problem.with_capacity(capacity)


def write_solution(
    path: str | os.PathLike,
    problem: Problem,
    offsets: Sequence[int],
    columns: Sequence[str] | None = None,
    uses: Sequence[str] | None = None,
    locations: Sequence[str] | None = None,
) -> None:
    """Write ``problem`` with one offset per buffer, atomically.

    ``uses`` gives the ``uses`` cells (one per buffer) when ``columns`` has that column.
    ``columns`` is the input header (from ``read_csv``); by default MiniMalloc's
    ``id,lower,upper,size`` plus ``alignment`` when any buffer has one. An ``offset`` column
    is appended when missing. ``begin``/``end`` columns are written inclusive again.
    ``locations`` (one per buffer) adds a ``location`` column; without them, a ``location``
    column of the input is written empty.
    """
    if len(offsets) != problem.buffer_count:
        raise ValueError(f"expected one offset per buffer ('{problem.buffer_count}') but got '{len(offsets)}'")
    if columns is None:
        columns = list(HALF_OPEN_COLUMNS)
        held = columns_of(problem)
        if np.any(held.arrays["aligns"] != 1) if held is not None else any(buffer.alignment != 1 for buffer in problem.buffers):
            columns.append("alignment")
        columns.extend(_mark_columns(problem))
    columns = list(columns)
    unknown = [column for column in columns if column not in KNOWN_COLUMNS]
    if unknown:
        raise ValueError(f"unknown column '{unknown[0]}'")
    if "offset" not in columns:
        columns.append("offset")
    if locations is not None and "location" not in columns:
        columns.append("location")
    fast = _solution_bytes(problem, offsets, columns)
    if fast is None:
        fast = _solution_text(problem, offsets, columns)
    if fast is not None:
        write_atomically(path, fast)
        return
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for index, (buffer, offset) in enumerate(zip(problem.buffers, offsets)):
        values = {
            "uses": "" if uses is None else uses[index],
            "location": "" if locations is None else locations[index],
            "id": buffer.id,
            "lower": buffer.start,
            "upper": buffer.end,
            "begin": buffer.start,
            "end": buffer.end - 1,
            "size": buffer.size,
            "alignment": buffer.alignment,
            "offset": offset,
            "persistent": int(buffer.persistent),
            "alias_of": "" if buffer.alias_of is None else buffer.alias_of,
        }
        writer.writerow([values[column] for column in columns])
    write_atomically(path, out.getvalue(), newline="")


_NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def _solution_bytes(problem: Problem, offsets: Sequence[int], columns: Sequence[str]) -> bytes | None:
    """The text ``write_solution`` writes, for a columnar problem, its rows formatted in C
    by ``_csvtext.format_rows`` (the fastest way: docs/decisions.md); None when it does not
    apply (not columnar, text cells, ids that need quoting or are not ASCII, negative
    values): then ``_solution_text`` does it, byte for byte the same."""
    held = columns_of(problem)
    if held is None or any(column in columns for column in (*TEXT_COLUMNS, "persistent")):
        return None
    arrays = held.arrays
    try:
        placed = np.asarray(offsets, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None
    if placed.shape != (held.count,) or held.count == 0:
        return None
    values = {
        "lower": arrays["starts"],
        "upper": arrays["ends"],
        "begin": arrays["starts"],
        "end": arrays["ends"] - 1,
        "size": arrays["sizes"],
        "alignment": arrays["aligns"],
        "offset": placed,
    }
    cells = []
    for column in columns:
        if column == "id":
            if held.numbers is not None:
                cells.append(held.numbers)
                continue
            ids = held.ids()
            if not all(type(identifier) is str for identifier in ids):
                return None
            joined = "".join(ids)
            if not joined.isascii() or _NEEDS_QUOTES.search(joined) or "" in ids:
                return None
            cells.append((joined.encode("ascii"), np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))))
            continue
        column_values = values[column]
        if column_values.min() < 0:
            return None
        cells.append(column_values)
    from telamalloc.runtime.alloc._csvtext import format_rows  # imported here: only this path needs it

    return ",".join(columns).encode("ascii") + b"\n" + format_rows(cells, held.count)


def _solution_text(problem: Problem, offsets: Sequence[int], columns: Sequence[str]) -> str | None:
    """The text ``write_solution`` writes, built column by column (faster than the csv
    writer row by row); None when some id needs quoting or a value is not a plain int (then the csv
    writer does it, byte for byte the same otherwise)."""
    if any(column in columns for column in (*TEXT_COLUMNS, "persistent")):  # text cells: the csv writer quotes them as needed
        return None
    buffers = problem.buffers
    ids = [buffer.id for buffer in buffers]
    if not all(type(identifier) is str for identifier in ids) or any(map(_NEEDS_QUOTES.search, ids)):
        return None
    if any(identifier == "" for identifier in ids):
        return None
    starts = [buffer.start for buffer in buffers]
    ends = [buffer.end for buffer in buffers]
    values = {
        "id": ids,
        "lower": starts,
        "upper": ends,
        "begin": starts,
        "end": [end - 1 for end in ends],
        "size": [buffer.size for buffer in buffers],
        "alignment": [buffer.alignment for buffer in buffers],
        "offset": list(offsets),
    }
    if not all(type(value) is int for column in columns if column != "id" for value in values[column]):
        return None
    cells = [values[column] if column == "id" else list(map(str, values[column])) for column in columns]
    lines = [",".join(columns)]
    lines.extend(map(",".join, zip(*cells)))
    return "\n".join(lines) + "\n"


def write_problem(path: str | os.PathLike, problem: Problem) -> None:
    """Write ``problem`` (no layout) atomically, for ``read_problem`` or MiniMalloc.

    Columns: ``id,lower,upper,size``, plus ``alignment`` when any buffer has one and
    ``offset`` when any buffer is pinned (empty for the free buffers). Raises ProblemError,
    writing nothing, where two ids are the same text (``1`` and ``"1"``: read back, they
    would be one id twice).
    """
    check_id_texts(problem)
    columns = list(HALF_OPEN_COLUMNS)
    if any(buffer.alignment != 1 for buffer in problem.buffers):
        columns.append("alignment")
    if any(buffer.offset is not None for buffer in problem.buffers):
        columns.append("offset")
    columns.extend(_mark_columns(problem))
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for buffer in problem.buffers:
        values = {
            "id": buffer.id,
            "lower": buffer.start,
            "upper": buffer.end,
            "size": buffer.size,
            "alignment": buffer.alignment,
            "offset": "" if buffer.offset is None else buffer.offset,
            "persistent": int(buffer.persistent),
            "alias_of": "" if buffer.alias_of is None else buffer.alias_of,
        }
        writer.writerow([values[column] for column in columns])
    write_atomically(path, out.getvalue(), newline="")


def _mark_columns(problem: Problem) -> list[str]:
    """The mark columns a problem needs: `persistent` and `alias_of` when any buffer has one."""
    if not has_marks(problem):
        return []
    buffers = problem.buffers
    return [column for column, marked in (("persistent", any(b.persistent for b in buffers)),
                                          ("alias_of", any(b.alias_of is not None for b in buffers))) if marked]
