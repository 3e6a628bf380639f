"""A rewrite in a process of its own, which the crash tests SIGKILL at a chosen point.

    python rewrite_child.py CHECKPOINT WHAT PAUSE MARKER

WHAT is a partition count (a rescale to it), ``gain-max`` (operator 0's aggregation buffer
gains a ``max`` field: ``support.queries.gain_max``) or ``forget-<keys>`` (a forget of the
``key`` column's values, one letter each). PAUSE is where the rewrite stops and
waits to be killed: ``after-first-store`` (one store of the operator written, the others not;
no offset entry yet), ``after-schema`` (a schema file replaced, the commit entry not written)
or ``before-commit`` (every store and the offset entry written, the commit entry not). It
creates MARKER once it is there.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import rockstate
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.tools import rewrite
from rockstate.tools.forget import forget
from rockstate.tools.transform import transform


def _pause(marker: Path) -> None:
    marker.write_text("paused")
    time.sleep(600)
    raise SystemExit("rewrite_child: not killed within 600 s")


def _then_pause(write, marker: Path):
    def write_then_pause(*args, **kwargs):
        result = write(*args, **kwargs)
        _pause(marker)
        return result
    return write_then_pause


def main(checkpoint: str, what: str, pause: str, marker: Path) -> None:
    # Two shuffle partitions for the rewrite's own joins, as the tests' sessions have (the
    # state keeps the count its checkpoint records).
    spark = rockstate.configure(SparkSession.builder.master("local[2]")
                                .config("spark.ui.enabled", "false")
                                .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
    if pause == "after-first-store":
        # Every store is written by one of these two (a change's rows, or a rescale's rows
        # through the first; transformWithState's column families through the second).
        for name in ("_write_rows", "_rewrite_families"):
            setattr(rewrite, name, _then_pause(getattr(rewrite, name), marker))
    elif pause == "before-commit":
        real_publish = WritableLocation.publish

        def publish_then_pause(self, relative, data):
            if relative.startswith("commits/"):
                _pause(marker)
            real_publish(self, relative, data)

        WritableLocation.publish = publish_then_pause  # type: ignore[method-assign]
    elif pause == "after-schema":
        real_replace = WritableLocation.replace

        def replace_then_pause(self, relative, data):
            real_replace(self, relative, data)
            _pause(marker)

        WritableLocation.replace = replace_then_pause  # type: ignore[method-assign]
    else:
        raise SystemExit(f"rewrite_child: unknown pause point {pause}")
    if what == "gain-max":
        transform(spark, checkpoint, 0, gain_max, value_schema=GAIN_MAX_SCHEMA)
    elif what.startswith("forget-"):
        forget(spark, checkpoint, spark.createDataFrame([(k,) for k in what[7:]], ["key"]))
    else:
        rewrite.rescale(spark, checkpoint, int(what))
    raise SystemExit("rewrite_child: the rewrite finished without pausing")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent.parent))
    from support.queries import GAIN_MAX_SCHEMA, gain_max

    main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
