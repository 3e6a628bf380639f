"""A bound on how long a piece of a test may run, for code that must never hang on its input
(the parsers of untrusted checkpoint files): past the bound the test fails, instead of CI
stalling. Never a speed assertion: the bound is far above any real run."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def within_seconds(seconds: int) -> Iterator[None]:
    """Raises TimeoutError in the block once ``seconds`` have passed (main thread only)."""
    def expired(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
