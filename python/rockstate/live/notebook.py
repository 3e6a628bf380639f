"""Checkpoints in a notebook: ``rockstate.show_checkpoints(query)`` shows a query's checkpoints
(``rockstate.checkpoint.model_html``) in a Jupyter output that it refreshes from the driver every
few seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rockstate.errors import RockstateSetupError
from rockstate.live.view import checkpoints

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery


class LiveCheckpoints:
    """A notebook output showing a query's checkpoints, refreshed from the driver every
    ``refresh_seconds`` until the query stops or :meth:`stop` is called."""

    def __init__(self, query: StreamingQuery, refresh_seconds: float = 2.0,
                 display: Callable[..., Any] | None = None) -> None:
        if display is None:
            try:
                from IPython.display import display as ipython_display
            except ImportError:
                raise RockstateSetupError(
                    "show_checkpoints() draws into a Jupyter notebook and needs IPython; "
                    "outside one, use rockstate.checkpoints(query) or rockstate.report()."
                ) from None
            display = ipython_display
        self._query = query
        self._read = checkpoints
        self._refresh = refresh_seconds
        self._stop = threading.Event()
        self.updates = 0
        self.handle = display(self._read(query), display_id=True)
        self._thread = threading.Thread(target=self._run, name="rockstate-live-checkpoints",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._refresh):
            try:
                self.handle.update(self._read(self._query))
                self.updates += 1
            except Exception:  # the session stopped under us: the last view stays shown
                return
            if not self._query.isActive:
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def show_checkpoints(query: StreamingQuery, refresh_seconds: float = 2.0,
                     display: Callable[..., Any] | None = None) -> LiveCheckpoints:
    """Shows ``query``'s checkpoints in the notebook and keeps the output fresh."""
    return LiveCheckpoints(query, refresh_seconds, display)
