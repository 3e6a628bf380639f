"""Waiting for what Spark, a query or a cluster reaches on its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], what: str, seconds: float = 60.0,
             every: float = 0.5) -> T:
    """Polls ``predicate`` until it returns something true, and returns that. The bound only
    stops a hang (never a timing assertion): past it, the test fails naming ``what``."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
