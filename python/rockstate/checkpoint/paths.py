"""The one containment rule for paths read from a checkpoint (docs/guarantees.md, "Trust model").

A manifest, a savepoint's file list, a Spark snapshot zip's metadata and Spark's operator
metadata all name files; a checkpoint may come from a backup or another team, so every such
name is checked before it becomes a path: relative, no empty, ``.`` or ``..`` component, no
``\\``, ``:`` (a scheme or a drive) or control character, and the joined path must stay inside
the folder it belongs to. The JVM applies the same rule (``CheckpointPath``); both test suites
pin it with ``tests/fixtures/untrusted/rules.json``.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from rockstate.errors import CorruptCheckpointError

_FORBIDDEN = frozenset("\\:") | frozenset(chr(c) for c in range(0x20)) | {"\x7f"}


def _refused(path: str, where: str, why: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"{where} names the path {path!r}, which {why}; a checkpoint path must stay inside its "
        "folder. The checkpoint was altered or comes from an untrusted source: restore it from "
        "a trusted copy (nothing was written).")


def relative_path(path: object, where: str) -> str:
    """``path`` if it is a contained relative path (``a/b/c``), else CorruptCheckpointError
    naming ``where`` (the file and entry the path was read from)."""
    if not isinstance(path, str) or not path:
        raise _refused(str(path), where, "is empty or not text")
    if path.startswith("/"):
        raise _refused(path, where, "is absolute")
    bad = next((c for c in path if c in _FORBIDDEN), None)
    if bad is not None:
        raise _refused(path, where, f"holds the character {bad!r}")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise _refused(path, where, f"has a {part or 'empty'!r} component")
    return path


def file_name(name: object, where: str) -> str:
    """``name`` if it is one contained path component (a file's name, no ``/``)."""
    relative_path(name, where)
    if "/" in name:  # type: ignore[operator]
        raise _refused(str(name), where, "is not a plain file name")
    return name  # type: ignore[return-value]


def join_within(root: str, relative: object, where: str) -> str:
    """``root/relative`` (posix, as fsspec paths are) after checking ``relative``."""
    return posixpath.join(root, relative_path(relative, where))


def local_within(directory: Path, relative: object, where: str) -> Path:
    """``directory/relative`` on the local disk after checking ``relative``; refused too when
    a symlink already in ``directory`` would take it elsewhere."""
    target = directory / relative_path(relative, where)
    base = os.path.realpath(directory)
    if os.path.commonpath([base, os.path.realpath(target)]) != base:
        raise _refused(str(relative), where, "leads out of its folder through a symlink")
    return target


def is_number(name: str) -> bool:
    """Whether a name from a listing is a batch, version or partition number: ASCII digits
    (``str.isdigit`` also takes ``²`` and other digits ``int`` refuses), at most 18 of them."""
    return 0 < len(name) <= 18 and name.isascii() and name.isdigit()
