"""Files written whole or not at all: every file telamalloc writes (layouts, CSV problems,
reports, pictures, viewer pages, tool outputs) goes through here, so that a reader never
sees half a file and a failure (a full disk, Ctrl-C, an exception) leaves none. It imports
nothing but the standard library, so every layer may use it.

What a path names decides how it is written, so that nothing but the output asked for is
touched:
- a regular file, or a path that does not exist: a hidden temporary file beside it, moved
  into place once complete (an existing file keeps its permission bits);
- a symbolic link: the same, at the file the link points to; the link stays a link;
- anything else that is not a directory (`/dev/null`, a character device, a FIFO): the
  whole output is kept in memory and written straight to it once complete, so the device
  stays a device and a reader of the pipe sees nothing of a failed run.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO


class AtomicFile:
    """A writable stream whose contents reach `path` only on `commit`; `discard` leaves
    `path` as it was. ``newline``: as for ``open`` (text streams; ``""`` for CSV writers).

    An OSError names `path`, never the temporary file.
    """

    def __init__(self, path: str | os.PathLike, binary: bool = False, newline: str | None = None):
        self.path = os.fspath(path)
        self._binary = binary
        self._newline = newline
        self._target = os.path.realpath(self.path)  # through every symbolic link
        self._mode: int | None = None  # permission bits of the file replaced
        self._temporary: str | None = None
        try:
            status = os.stat(self._target)
        except FileNotFoundError:
            status = None
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.path) from None
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(21, "Is a directory", self.path)
        if status is not None and not stat.S_ISREG(status.st_mode):
            self._stream: IO = io.BytesIO() if binary else io.StringIO(newline=newline)
            return
        if status is not None:
            self._mode = stat.S_IMODE(status.st_mode)
        try:
            descriptor, self._temporary = tempfile.mkstemp(prefix=".tela-", dir=os.path.dirname(self._target))
        except OSError as error:
            raise OSError(error.errno, error.strerror, self.path) from None
        options = {} if binary else {"encoding": "utf-8", "newline": newline}
        self._stream = os.fdopen(descriptor, "wb" if binary else "w", **options)

    @property
    def stream(self) -> IO:
        return self._stream

    def write(self, data: str | bytes) -> int:
        return self._stream.write(data)

    def flush(self) -> None:
        self._stream.flush()

    def commit(self) -> None:
        """Puts the contents in place (see the module doc); the stream is closed."""
        try:
            if self._temporary is None:
                self._write_through()
                return
            self._stream.close()
            if self._mode is None:
                mask = os.umask(0o022)
                os.umask(mask)
                self._mode = 0o666 & ~mask
            os.chmod(self._temporary, self._mode)
            os.replace(self._temporary, self._target)
            self._temporary = None
        except OSError as error:
            self.discard()
            raise OSError(error.errno, error.strerror, self.path) from None

    def discard(self) -> None:
        """Drops the contents; `path` stays as it was."""
        self._stream.close()
        if self._temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temporary)
            self._temporary = None

    def _write_through(self) -> None:
        contents = self._stream.getvalue()
        self._stream.close()
        if self._binary:
            with open(self._target, "wb") as device:
                device.write(contents)
        else:
            with open(self._target, "w", encoding="utf-8", newline="") as device:
                device.write(contents)  # newlines were translated by the StringIO


@contextlib.contextmanager
def open_atomically(path: str | os.PathLike, binary: bool = False, newline: str | None = None) -> Iterator[IO]:
    """A stream whose contents replace ``path`` only when the block completes (see
    `AtomicFile`); an exception in the block leaves ``path`` as it was."""
    output = AtomicFile(path, binary=binary, newline=newline)
    try:
        yield output.stream
    except BaseException:
        output.discard()
        raise
    output.commit()


def write_atomically(path: str | os.PathLike, data: str | bytes, newline: str | None = None) -> None:
    """Write ``data`` (text or bytes) as the whole of ``path`` (see ``open_atomically``)."""
    with open_atomically(path, binary=isinstance(data, bytes), newline=newline) as stream:
        stream.write(data)
