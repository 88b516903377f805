"""Outputs reach what a path names and nothing else: a regular file is replaced whole, a
symbolic link stays a link (its target is written), a device or a FIFO stays what it was
and gets the bytes; every tool's output option goes through the same code."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from telamalloc.files import AtomicFile, open_atomically, write_atomically

ROOT = Path(__file__).resolve().parents[1]


def null_device(directory: Path) -> Path:
    """A character device like /dev/null (major 1, minor 3) inside `directory`, so that a
    regression never replaces the machine's own; skips where creating one is not allowed."""
    path = directory / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        with open(path, "wb") as probe:
            probe.write(b"x")
    except OSError as error:
        pytest.skip(f"cannot create a character device here: {error.strerror}")
    return path


def read_fifo(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of the FIFO at `path` in a thread (join it); what it read lands in the list."""
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as stream:
            received.append(stream.read())

    reader = threading.Thread(target=read)
    reader.start()
    return reader, received


def release_reader(path: Path, reader: threading.Thread) -> None:
    """Ends ``reader`` (of ``read_fifo``) whether or not the writer under test opened the
    FIFO: while it lives, an open for writing that does not wait meets it if it waits in
    its own open (ENXIO: it is not there, having finished reading or not yet begun). A
    blocking open would wait for ever when the reader finishes between the check and it."""
    while reader.is_alive():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
        reader.join(0.05)


def test_a_regular_file_is_replaced_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    write_atomically(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_a_symbolic_link_stays_a_link_and_its_target_is_written(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "out.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(Path("real") / "out.txt")
    write_atomically(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "out.txt")
    assert target.read_text() == "new\n"
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to("made.txt")
    write_atomically(dangling, b"bytes")
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_bytes() == b"bytes"
    assert sorted(os.listdir(tmp_path / "real")) == ["out.txt"]


def test_a_character_device_stays_a_device(tmp_path):
    device = null_device(tmp_path)
    write_atomically(device, "planned\n")
    with open_atomically(device, binary=True) as stream:
        stream.write(b"\x00\x01")
    assert stat.S_ISCHR(device.stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["null"]


def test_a_fifo_gets_the_bytes_once_complete_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, received = read_fifo(fifo)
    with open_atomically(fifo, newline="") as stream:
        stream.write("a,b\r\n")
        stream.write("1,2\n")
    reader.join()
    assert received == [b"a,b\r\n1,2\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    # a failing block never opens the FIFO: no reader is needed, nothing is written
    with pytest.raises(RuntimeError):
        with open_atomically(fifo) as stream:
            stream.write("half")
            raise RuntimeError("stop")
    assert stat.S_ISFIFO(fifo.stat().st_mode) and sorted(os.listdir(tmp_path)) == ["pipe"]


def test_a_directory_is_refused_with_its_name(tmp_path):
    with pytest.raises(IsADirectoryError) as error:
        AtomicFile(tmp_path)
    assert error.value.filename == str(tmp_path)


def test_discard_leaves_the_target_as_it_was(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    output = AtomicFile(target)
    output.write("new\n")
    output.discard()
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["out.txt"]


def _tela_opt(output: Path) -> int:
    from telamalloc.tools.tela_opt import main

    return main([str(ROOT / "examples" / "mlp.mlir"), "-p", "tela-pipeline", "-o", str(output)])


def _tela_alloc(output: Path) -> int:
    from telamalloc.tools.tela_alloc import main

    return main(["--input", str(ROOT / "examples" / "input.12.csv"), "--capacity", "12", "--output", str(output)])


def _tela_import(output: Path) -> int:
    pytest.importorskip("onnx")
    from telamalloc.tools.tela_import import main

    return main([str(ROOT / "examples" / "onnx" / "mlp.onnx"), "-o", str(output)])


TOOLS = {"tela-opt": _tela_opt, "tela-alloc": _tela_alloc, "tela-import": _tela_import}


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_writes_through_devices_fifos_and_links(tool, tmp_path, capsys):
    run = TOOLS[tool]
    device = null_device(tmp_path)
    assert run(device) == 0
    assert stat.S_ISCHR(device.stat().st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, received = read_fifo(fifo)
    try:
        assert run(fifo) == 0
    finally:
        release_reader(fifo, reader)  # ends the reader even where the tool never opened the FIFO
    assert received[0] and stat.S_ISFIFO(fifo.stat().st_mode)
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real" / "out")
    assert run(link) == 0
    assert link.is_symlink() and (tmp_path / "real" / "out").read_bytes() == received[0]
    assert sorted(os.listdir(tmp_path)) == ["link", "null", "pipe", "real"]
    capsys.readouterr()
