"""MLIR's textual pass pipeline, as `mlir-opt --pass-pipeline` reads it.

```
builtin.module(func.func(tela-plan{capacity=65536 mode=minimize}), canonicalize)
tela-plan{capacity=65536 report dump-problem=out/x.csv},tela-lower
```

A pipeline is a comma-separated list of elements; an element is either a pass,
`name` or `name{key=value key=value flag}`, or an anchor, `op-name(pipeline)`, that
runs the nested pipeline on ops of that name. Option values are written as mlir-opt
takes them: unquoted (`plot=p.svg`, `report-file=out/r.txt`), quoted with `"` or `'`
when they hold spaces, or in braces (`{...}`, kept with nested braces, e.g. a list).
A key given twice in one pass is an error. This module only reads the text; which
anchors and passes exist is the driver's business (`tools/tela_opt.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


class PipelineSyntaxError(ValueError):
    """A malformed pipeline; the message quotes the place (`at column N`)."""


@dataclass(frozen=True)
class PassOption:
    key: str
    value: str | None  # None: a bare flag (`report`)
    quoted: bool  # the value was written in quotes (a string, whatever it looks like)


@dataclass(frozen=True)
class PassEntry:
    """One pass of the pipeline, with the anchors it is nested in (outermost first)."""

    name: str
    options: tuple[PassOption, ...]
    anchors: tuple[str, ...]
    column: int  # 1-based column of the pass name in the pipeline text


_NAME_CHARACTERS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.$")


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.position = 0

    def error(self, message: str, position: int | None = None) -> PipelineSyntaxError:
        column = (self.position if position is None else position) + 1
        return PipelineSyntaxError(f"{message} at column {column}")

    def skip_spaces(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def peek(self) -> str:
        self.skip_spaces()
        return self.text[self.position] if self.position < len(self.text) else ""

    def expect(self, character: str, what: str) -> None:
        if self.peek() != character:
            found = self.peek()
            shown = f"'{found}'" if found else "the end of the pipeline"
            raise self.error(f"expected '{character}' {what}, found {shown}")
        self.position += 1

    def name(self, what: str) -> str:
        self.skip_spaces()
        start = self.position
        while self.position < len(self.text) and self.text[self.position] in _NAME_CHARACTERS:
            self.position += 1
        if start == self.position:
            found = self.text[start] if start < len(self.text) else ""
            shown = f"'{found}'" if found else "the end of the pipeline"
            raise self.error(f"expected {what}, found {shown}")
        return self.text[start : self.position]


def parse_pipeline_text(text: str) -> list[PassEntry]:
    """The passes of `text` in order, each with its anchors; raises PipelineSyntaxError."""
    reader = _Reader(text)
    entries: list[PassEntry] = []
    if reader.peek() == "":
        return entries
    _parse_list(reader, (), entries)
    if reader.peek() != "":
        raise reader.error(f"unexpected '{reader.peek()}'; separate passes with ','")
    return entries


def _parse_list(reader: _Reader, anchors: tuple[str, ...], entries: list[PassEntry]) -> None:
    while True:
        reader.skip_spaces()
        column = reader.position + 1
        name = reader.name("a pass or op name")
        following = reader.peek()
        if following == "(":
            reader.position += 1
            if reader.peek() != ")":
                _parse_list(reader, (*anchors, name), entries)
            reader.expect(")", f"to close '{name}('")
        else:
            options = _parse_options(reader, name) if following == "{" else ()
            entries.append(PassEntry(name, options, anchors, column))
        if reader.peek() != ",":
            return
        reader.position += 1


def _parse_options(reader: _Reader, pass_name: str) -> tuple[PassOption, ...]:
    reader.expect("{", "")
    options: list[PassOption] = []
    seen: dict[str, PassOption] = {}
    while reader.peek() != "}":
        if reader.peek() == "":
            raise reader.error(f"expected '}}' to close the options of '{pass_name}', found the end of the pipeline")
        key = reader.name(f"an option name of '{pass_name}'")
        value: str | None = None
        quoted = False
        if reader.peek() == "=":
            reader.position += 1
            value, quoted = _parse_value(reader, key)
        option = PassOption(key, value, quoted)
        normal = key.replace("_", "-")
        if normal in seen:
            first = seen[normal]
            raise PipelineSyntaxError(
                f"option '{normal}' of '{pass_name}' is given twice ('{_shown(first)}' and "
                f"'{_shown(option)}'); give it once"
            )
        seen[normal] = option
        options.append(option)
    reader.position += 1
    return tuple(options)


def _shown(option: PassOption) -> str:
    return "true" if option.value is None else option.value


def _parse_value(reader: _Reader, key: str) -> tuple[str, bool]:
    text = reader.text
    reader.skip_spaces()
    start = reader.position
    if start >= len(text):
        raise reader.error(f"expected a value for option '{key}', found the end of the pipeline")
    quote = text[start]
    if quote in "\"'":
        end = text.find(quote, start + 1)
        if end < 0:
            raise reader.error(f"unterminated {quote} in the value of option '{key}'", start)
        reader.position = end + 1
        return text[start + 1 : end], True
    if quote == "{":
        depth = 0
        for index in range(start, len(text)):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    reader.position = index + 1
                    return text[start + 1 : index], False
        raise reader.error(f"unbalanced '{{' in the value of option '{key}'", start)
    index = start
    while index < len(text) and not text[index].isspace() and text[index] != "}":
        index += 1
    if index == start:
        raise reader.error(f"expected a value for option '{key}'")
    reader.position = index
    return text[start:index], False
