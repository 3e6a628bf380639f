"""A new location that a savepoint or a restore is built in, published in one exclusive step.

On a local (or mounted) file system the copy is built in a hidden staging folder beside the
target, ``.<name>.rockstate-<id>.staging``, and published with one ``rename``: the target
appears whole or not at all, and of two copies racing for one target the second one's rename
fails (the target is no longer empty), so they never merge. An interrupted copy leaves only its
staging folder; the next copy into that target removes it once its owner process is gone.

An object store has no rename: the copy is written in place, after a claim
(``_rockstate_claim.json``) that names the copy's source. A second copy of another source
into the target is refused; the same copy run again (after an interruption) resumes, writing
the same files over the same names. The claim is checked again just before the last file, so
a copy that lost its claim to another one fails instead of publishing a mixture; it is removed
once the copy is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import shutil
import socket
import uuid
from typing import Any

import fsspec

from rockstate.checkpoint.paths import join_within
from rockstate.errors import RockstateError

CLAIM_FILE = "_rockstate_claim.json"
# A claim is a few hundred bytes; a larger one is not this tool's.
_CLAIM_LIMIT = 1 << 20
_STAGING_SUFFIX = ".staging"


class StagedTarget:
    """The target of one copy; ``write`` files into it, then ``publish`` it."""

    def __init__(self, url: str, source: str, what: str,
                 options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.what = what  # "savepoint" or "restore": named in errors
        self.fs, self.root = fsspec.core.url_to_fs(url, **(options or {}))
        self.local = "file" in _protocols(self.fs)
        self.claim = {"source": source, "id": str(uuid.uuid4()), "host": socket.gethostname(),
                      "pid": os.getpid()}
        if self.local:
            self.root = os.path.abspath(self.root)
            self._refuse_existing()
            parent, name = os.path.split(self.root)
            os.makedirs(parent, exist_ok=True)
            _remove_stale_staging(parent, name)
            self.base = os.path.join(parent, f".{name}.rockstate-{self.claim['id']}"
                                     f"{_STAGING_SUFFIX}")
            os.mkdir(self.base)
            _write_json(self.fs, os.path.join(self.base, CLAIM_FILE), self.claim)
        else:
            self.base = self.root
            claim_path = posixpath.join(self.base, CLAIM_FILE)
            previous = self._read_claim()
            if previous is not None and previous.get("source") == source:
                self.claim = previous  # resuming the same copy
                _write_json(self.fs, claim_path, self.claim)
            else:
                self._refuse_existing()
                self._claim_exclusively(claim_path)

    def _claim_exclusively(self, claim_path: str) -> None:
        """Writes the claim only if there is none: on S3 a PUT with ``If-None-Match: *``, so
        of two copies started at once only one goes on, on a store that makes that atomic
        (docs/object-stores.md); elsewhere a check and a write."""
        try:
            _write_json(self.fs, claim_path, self.claim, mode="create")
        except FileExistsError:
            raise RockstateError(
                f"another {self.what} claimed {self.url} while this one started; this one "
                "wrote nothing there. Give each copy a location of its own.") from None

    @property
    def resumed_id(self) -> str:
        """An id that stays the same when an interrupted copy is run again."""
        return str(self.claim["id"])

    def write(self, relative: str, data: bytes) -> None:
        """Writes one file of the copy at ``relative`` (checked to stay inside it)."""
        path = join_within(self.base, relative, f"the {self.what} into {self.url}")
        self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, data)

    def publish(self, last: str | None = None, data: bytes | None = None) -> None:
        """Makes the copy visible at the target, ``last`` (with ``data``) written as its final
        file. Raises if another copy took the target meanwhile."""
        if self.local:
            if last is not None:
                self.write(last, data or b"")
            try:
                if os.path.isdir(self.root):
                    os.rmdir(self.root)  # an empty target; fails if one was published
                os.rename(self.base, self.root)
            except OSError:
                raise RockstateError(
                    f"{self.url} was written by another {self.what} while this one ran; this "
                    f"one was not published (its copy is in {self.base}, safe to delete)."
                ) from None
            # The claim went along with the rename (a staging folder is never without one
            # while its owner runs); the published copy does not keep it.
            os.remove(os.path.join(self.root, CLAIM_FILE))
            return
        current = self._read_claim()
        if current is None or current.get("id") != self.claim["id"]:
            raise RockstateError(
                f"another {self.what} into {self.url} took it over while this one ran; this "
                "one stopped before publishing. Give each copy a location of its own.")
        if last is not None:
            self.write(last, data or b"")
        self.fs.rm_file(posixpath.join(self.base, CLAIM_FILE))

    def abandon(self) -> None:
        """Removes a local staging folder after a failure (an object store's partial copy
        stays, with its claim, for a run of the same copy to resume)."""
        if self.local:
            shutil.rmtree(self.base, ignore_errors=True)

    def _read_claim(self) -> dict | None:
        path = posixpath.join(self.base, CLAIM_FILE)
        try:
            with self.fs.open(path, "rb") as f:
                doc = json.loads(f.read(_CLAIM_LIMIT + 1))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):
            raise RockstateError(f"{path} is damaged; delete {self.url} (written by an "
                                 f"interrupted {self.what}) and try again.") from None
        return doc if isinstance(doc, dict) else None

    def _refuse_existing(self) -> None:
        if not self.fs.exists(self.root):
            return
        names = [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(self.root, detail=False)
                 ] if self.fs.isdir(self.root) else ["?"]
        if names:
            held = " (another copy's claim is there: one is running, or was interrupted; " \
                "delete the location to start afresh)" if CLAIM_FILE in names else ""
            raise RockstateError(f"{self.url} already exists and is not empty{held}; give a new "
                                 "location (nothing was written).")


def _protocols(fs: Any) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)


def _write_json(fs: Any, path: str, doc: dict, mode: str = "overwrite") -> None:
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    fs.pipe_file(path, json.dumps(doc).encode(), mode=mode)


def _remove_stale_staging(parent: str, name: str) -> None:
    """Removes staging folders of earlier copies into ``name`` whose process is gone."""
    prefix = f".{name}.rockstate-"
    for entry in os.listdir(parent):
        if not (entry.startswith(prefix) and entry.endswith(_STAGING_SUFFIX)):
            continue
        folder = os.path.join(parent, entry)
        try:
            with open(os.path.join(folder, CLAIM_FILE)) as f:
                owner = json.load(f)
        except (OSError, ValueError):
            owner = {}  # published or half-made: its claim is gone or unreadable
        if owner.get("host") == socket.gethostname() and _alive(int(owner.get("pid", -1))):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    with contextlib.suppress(PermissionError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
    return True
