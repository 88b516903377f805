"""Files written whole or not at all: every file telamalloc writes (layouts, CSV problems,
reports, pictures, viewer pages, tool outputs) goes through here, so that a reader never
sees half a file and a failure (a full disk, Ctrl-C, an exception) leaves none. It imports
nothing but the standard library, so every layer may use it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def open_atomically(path: str | os.PathLike, binary: bool = False, newline: str | None = None) -> Iterator[IO]:
    """A stream whose contents replace ``path`` only when the block completes.

    Writes a hidden temporary file beside ``path`` and moves it into place. The file gets
    the permissions the umask gives a new file. An OSError names ``path``, never the
    temporary file. ``newline``: as for ``open`` (text streams; ``""`` for CSV writers).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=".tela-", dir=directory)
    except OSError as error:
        raise OSError(error.errno, error.strerror, path) from None
    try:
        options = {} if binary else {"encoding": "utf-8", "newline": newline}
        with os.fdopen(descriptor, "wb" if binary else "w", **options) as stream:
            yield stream
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except OSError as error:
        _remove(temporary)
        raise OSError(error.errno, error.strerror, path) from None
    except BaseException:
        _remove(temporary)
        raise


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def write_atomically(path: str | os.PathLike, data: str | bytes, newline: str | None = None) -> None:
    """Write ``data`` (text or bytes) as the whole of ``path`` (see ``open_atomically``)."""
    with open_atomically(path, binary=isinstance(data, bytes), newline=newline) as stream:
        stream.write(data)
