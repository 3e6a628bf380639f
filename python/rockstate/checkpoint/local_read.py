"""Reading one file of a checkpoint on the local disk, as untrusted input.

A path read from a checkpoint is contained by ``paths`` before it gets here; this module makes
sure the file system does not take it elsewhere. From the location's root (resolved once: the
user named it), every component is opened with ``O_NOFOLLOW``, so a symbolic link at any
component is refused, not followed; the file itself must be a regular file (a FIFO would block
the reader, a device would never end), and no more than ``limit`` bytes are ever read.
"""

from __future__ import annotations

import errno
import os
import stat

from rockstate.errors import CorruptCheckpointError

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Linux reads at most this much at once.
_CHUNK_MAX = 0x7FFFF000


def read_local_file(root: str, relative: str, limit: int, needed_by: str,
                    byte_range: tuple[int, int] | None = None) -> bytes:
    """The bytes of ``root/relative`` (those of ``byte_range``, start and end, when given);
    ``relative`` is a contained path (``a/b/c``) and ``root`` a real directory.

    FileNotFoundError when it is missing; CorruptCheckpointError naming the file and
    ``needed_by`` when a component is a symbolic link or not a directory, the file is not a
    regular file, or it (or the range) holds more than ``limit`` bytes."""
    where = os.path.join(root, relative)
    parts = relative.split("/")
    fd = _open(root, None, _DIRECTORY, where, needed_by, root)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            at = os.path.join(root, *parts[:i + 1])
            child = _open(part, fd, _FILE if last else _DIRECTORY, where, needed_by, at)
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(where, needed_by, f"is not a regular file ({_kind(info.st_mode)})",
                           "Replace it with the file itself")
        start, end = (0, info.st_size) if byte_range is None else byte_range
        end = min(end, info.st_size)
        if info.st_size > max(limit, end) or end - start > limit:
            raise _refused(where, needed_by, f"holds {info.st_size} bytes, more than such a "
                           f"file may ({limit})", "Restore it from a trusted copy")
        return _read_range(fd, start, end)
    finally:
        os.close(fd)


def _open(name: str, dir_fd: int | None, flags: int, where: str, needed_by: str,
          at: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "missing", where) from None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK) or (
                e.errno == errno.ENOTDIR and os.path.islink(at)):
            raise _refused(where, needed_by, f"goes through the symbolic link {at}; rockstate "
                           "follows no link in a checkpoint",
                           "Replace the link with the folder or file itself") from None
        if e.errno == errno.ENOTDIR:
            raise _refused(where, needed_by, f"goes through {at}, which is not a folder",
                           "Restore the checkpoint from a trusted copy") from None
        raise _refused(where, needed_by, f"cannot be opened ({e.strerror})",
                       "Check the path and its permissions") from None


def _read_range(fd: int, start: int, end: int) -> bytes:
    """``end - start`` bytes at ``start`` (fewer if the file is shorter); a regular file's
    read returns them in one piece (up to about 2 GiB), so one copy is held."""
    pieces = []
    while start < end and (piece := os.pread(fd, min(end - start, _CHUNK_MAX), start)):
        pieces.append(piece)
        start += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def _refused(where: str, needed_by: str, why: str, fix: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(f"{where}, needed by {needed_by}, {why}. {fix}; nothing "
                                  "was read from it.")
