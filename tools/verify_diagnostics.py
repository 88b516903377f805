"""`tela-opt --verify-diagnostics`: mlir-opt's contract for expected diagnostics.

Each chunk of the input (the whole file, or each `// -----` part with
`--split-input-file`) declares the diagnostics it expects in comments:

```mlir
// expected-error @+1 {{cannot plan '@f'}}
%a = scratchpad.alloc ...
"test.op"() : () -> ()  // expected-remark {{not proved optimal}}
// expected-note @-3 {{'1024' B}}
// expected-error-re @below {{needs '{{[0-9]+}}' bytes}}
```

- kinds: `expected-error`, `expected-warning`, `expected-note`, `expected-remark`;
- the line: the comment's own line, `@+N` / `@-N` lines below / above it, `@above`
  (the nearest line above that is not itself an expectation), `@below` (the nearest
  such line below), or `@unknown` (a diagnostic without a line, e.g. on the file);
- the text between the outermost `{{` and `}}` must occur in the diagnostic's message;
  inside it, `{{regex}}` parts are regular expressions (Python's `re`), the rest is
  literal.

Every diagnostic must match an expectation of its kind on its line, and every
expectation must be matched; otherwise each mismatch is printed (`expected error "..."
was not produced` at the comment, `unexpected remark: ...` at the diagnostic) and the
exit status is 1. A matching diagnostic is not printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KINDS = ("error", "warning", "note", "remark")

_EXPECTATION = re.compile(
    r"expected-(?P<kind>error|warning|note|remark)(?P<re>-re)?"
    r"[ \t]*(?:@(?P<where>[+-][0-9]+|above|below|unknown))?[ \t]*\{\{(?P<text>.*)\}\}[ \t]*$"
)
_DESIGNATOR = re.compile(r"//[ \t]*(?P<designator>expected-(?:error|warning|note|remark))")
_LOCATION = re.compile(r"^(?P<file>.*):(?P<line>[0-9]+):(?P<column>[0-9]+)$")


@dataclass(frozen=True)
class Emitted:
    """One diagnostic a chunk produced: `location: kind: message`."""

    location: str  # `file:line:col`, or just the file when no position is known
    kind: str  # one of KINDS
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.kind}: {self.message}"

    @property
    def line(self) -> int | None:
        match = _LOCATION.match(self.location)
        return None if match is None else int(match["line"])


@dataclass
class Expectation:
    kind: str
    line: int | None  # None: `@unknown`
    text: str  # as written between the braces
    pattern: re.Pattern[str]
    location: str  # `file:line:col` of the comment
    matched: bool = field(default=False)


class ExpectationError(ValueError):
    """A malformed `expected-*` comment (e.g. a bad regex); located at the comment."""


def _compile(text: str, location: str) -> re.Pattern[str]:
    parts: list[str] = []
    position = 0
    while True:
        start = text.find("{{", position)
        if start < 0:
            parts.append(re.escape(text[position:]))
            break
        end = text.find("}}", start + 2)
        if end < 0:
            raise ExpectationError(f"{location}: error: unclosed '{{{{' in the expected text '{text}'; close it with '}}}}'")
        parts.append(re.escape(text[position:start]))
        regex = text[start + 2 : end]
        try:
            re.compile(regex)
        except re.error as error:
            raise ExpectationError(f"{location}: error: invalid regex '{regex}' in an expected diagnostic: {error}") from None
        parts.append(f"(?:{regex})")
        position = end + 2
    return re.compile("".join(parts))


def parse_expectations(text: str, file_name: str, line_offset: int = 0) -> list[Expectation]:
    """The `expected-*` comments of one chunk (lines counted from the top of the file)."""
    lines = text.split("\n")
    expectations: list[Expectation] = []
    waiting_for_next_line: list[Expectation] = []
    last_plain_line: int | None = None
    for index, line_text in enumerate(lines):
        line = line_offset + index + 1
        comment = line_text.find("//")
        designator = None if comment < 0 else _DESIGNATOR.match(line_text, comment)
        if designator is None:  # no comment, or one that is not an expectation
            if line_text.strip():
                last_plain_line = line
                for expectation in waiting_for_next_line:
                    expectation.line = line
                waiting_for_next_line.clear()
            continue
        match = _EXPECTATION.match(line_text, designator.start("designator"))
        location = f"{file_name}:{line}:{designator.start('designator') + 1}"
        if match is None:
            raise ExpectationError(
                f"{location}: error: malformed expected diagnostic; write e.g. "
                "'// expected-error @+1 {{text}}'"
            )
        code_before = line_text[: designator.start()].strip()
        if code_before:  # an expectation after code on the same line
            last_plain_line = line
            for expectation in waiting_for_next_line:
                expectation.line = line
            waiting_for_next_line.clear()
        where = match["where"]
        target: int | None = line
        if where is None:
            pass
        elif where == "unknown":
            target = None
        elif where == "above":
            target = last_plain_line if last_plain_line is not None else line
        elif where == "below":
            target = line_offset + len(lines)  # if nothing follows (MLIR: the last line)
        else:
            target = line + int(where)
        text_in_braces = match["text"]
        expectation = Expectation(match["kind"], target, text_in_braces, _compile(text_in_braces, location), location)
        if where == "below":
            waiting_for_next_line.append(expectation)
        expectations.append(expectation)
    return expectations


def verify(expectations: list[Expectation], emitted: list[Emitted]) -> list[str]:
    """The mismatches, each a one-line error to print (empty: the chunk verifies)."""
    problems: list[str] = []
    for diagnostic in emitted:
        line = diagnostic.line
        near_miss: Expectation | None = None
        for expectation in expectations:
            if expectation.matched or expectation.line != line:
                continue
            if not expectation.pattern.search(diagnostic.message):
                continue
            if expectation.kind == diagnostic.kind:
                expectation.matched = True
                break
            near_miss = near_miss or expectation
        else:
            if near_miss is not None:
                near_miss.matched = True
                problems.append(
                    f"{near_miss.location}: error: '{diagnostic.kind}' diagnostic emitted when "
                    f"expecting a '{near_miss.kind}': {diagnostic.message}"
                )
            else:
                problems.append(f"{diagnostic.location}: error: unexpected {diagnostic.kind}: {diagnostic.message}")
    for expectation in expectations:
        if not expectation.matched:
            where = "without a location" if expectation.line is None else f"at line {expectation.line}"
            problems.append(
                f'{expectation.location}: error: expected {expectation.kind} "{expectation.text}" '
                f"was not produced ({where})"
            )
    return problems
