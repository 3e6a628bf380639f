"""Progress of the long offline commands (read, export, verify, report), on standard error.

On a terminal it is a tqdm bar over the stores; otherwise (a log, a pipe, a notebook's
captured output) one line per store, which a log keeps and a bar would garble.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import IO, Any


class StoreProgress:
    """``progress(label)`` once per store, as the offline functions call it."""

    def __init__(self, total: int, verb: str, stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stderr
        self._verb = verb
        self._bar: Any = None
        if self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=verb, unit="store", file=self._stream,
                             dynamic_ncols=True)

    def __call__(self, label: str) -> None:
        if self._bar is None:
            print(f"{self._verb} {label}", file=self._stream)
        else:
            self._bar.set_postfix_str(label, refresh=False)
            self._bar.update(1)

    def wrap(self, items: Iterable) -> Iterable:
        """Yields ``items``, counting each as a store."""
        for item in items:
            self(str(item))
            yield item

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> StoreProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
