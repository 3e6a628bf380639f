"""A rescale in a process of its own, which the crash tests SIGKILL at a chosen point.

    python rewrite_child.py CHECKPOINT PARTITIONS PAUSE MARKER

PAUSE is where the rescale stops and waits to be killed: ``after-first-store`` (one store of
the operator written, the others not; no offset entry yet) or ``before-commit`` (every store
and the offset entry written, the commit entry not). It creates MARKER once it is there.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import rockstate
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.tools import rewrite


def _pause(marker: Path) -> None:
    marker.write_text("paused")
    time.sleep(600)
    raise SystemExit("rewrite_child: not killed within 600 s")


def main(checkpoint: str, partitions: int, pause: str, marker: Path) -> None:
    spark = rockstate.configure(SparkSession.builder.master("local[2]")
                                .config("spark.ui.enabled", "false")).getOrCreate()
    if pause == "after-first-store":
        real = rewrite._rewrite_store

        def first_then_pause(*args, **kwargs):
            result = real(*args, **kwargs)
            _pause(marker)
            return result

        rewrite._rewrite_store = first_then_pause
    elif pause == "before-commit":
        real_publish = WritableLocation.publish

        def publish_then_pause(self, relative, data):
            if relative.startswith("commits/"):
                _pause(marker)
            real_publish(self, relative, data)

        WritableLocation.publish = publish_then_pause  # type: ignore[method-assign]
    else:
        raise SystemExit(f"rewrite_child: unknown pause point {pause}")
    rewrite.rescale(spark, checkpoint, partitions)
    raise SystemExit("rewrite_child: the rescale finished without pausing")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4]))
