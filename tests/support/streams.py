"""Running one streaming query on a chosen state store provider, batch by batch.

Spark's own HDFSBackedStateStoreProvider is the oracle: the same query on the same input must
give the same output, batch for batch, and the same state on rockstate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from rockstate.session.providers import SPARK_HDFS_CLASS

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


@dataclass
class StreamRun:
    checkpoint: Path | str  # a local directory, or a URL (s3a://...)
    outputs: dict[int, list[tuple]] = field(default_factory=dict)
    progress: list[dict] = field(default_factory=list)

    def all_rows(self) -> list[tuple]:
        return sorted((r for rows in self.outputs.values() for r in rows), key=_key)


def _key(row: tuple) -> str:
    return json.dumps(row, default=str, sort_keys=True)


def run_stream(
    spark,
    provider: str,
    build: Callable,
    batches: Sequence[Sequence[dict]],
    *,
    workdir: Path,
    name: str,
    schema: str,
    output_mode: str = "update",
    restart_at: int | None = None,
    sources: int = 1,
    before_batch: Callable[[int], None] | None = None,
    after_batch: Callable[[int, Any], None] | None = None,
    confs: dict[str, str] | None = None,
    checkpoint: str | None = None,
    relocate: Callable[[Any, Path | str], Path | str] | None = None,
    first_file: int = 0,
) -> StreamRun:
    """Feeds ``batches`` (one JSON file each) to ``build(stream)`` and records every batch.

    With ``sources=2`` the query gets two streams (for joins), split from the one input by
    each item's ``"side"`` (0 or 1), so both sides of a batch always arrive together.
    ``restart_at=i`` stops the query before batch ``i`` and starts it again from its
    checkpoint, as a crashed or redeployed query would be. ``before_batch(i)`` runs while the
    query is live, before batch ``i`` arrives (to kill an executor, say); ``after_batch(i,
    query)`` runs once batch ``i`` is processed. ``confs`` are SQL settings for this query
    only. ``checkpoint`` puts the checkpoint at that URL (an object store, say) instead of
    ``workdir``. ``relocate(query, checkpoint)``, with ``restart_at``, stops the query itself
    and returns the checkpoint the query restarts from (a savepoint restored elsewhere, say).
    ``first_file``: the number of the first input file, to go on feeding a checkpoint an
    earlier run of the same ``name`` fed (Spark's file source stays in its first folder).
    """
    src = workdir / f"{name}-src"
    src.mkdir(parents=True, exist_ok=True)
    run = StreamRun(checkpoint=checkpoint or workdir / f"{name}-checkpoint")
    spark.conf.set(PROVIDER_KEY, provider)
    saved = {k: spark.conf.get(k, None) for k in (confs or {})}
    for k, v in (confs or {}).items():
        spark.conf.set(k, v)
    if sources > 1:
        schema = f"{schema}, side INT"

    def sink(df, batch_id: int) -> None:
        run.outputs[batch_id] = sorted((tuple(r) for r in df.collect()), key=_key)

    def start():
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src))
        if sources > 1:
            sides = [stream.filter(F.col("side") == i).drop("side") for i in range(sources)]
            df = build(*sides)
        else:
            df = build(stream)
        return (
            df.writeStream.outputMode(output_mode)
            .foreachBatch(sink)
            .option("checkpointLocation", str(run.checkpoint))
            .start()
        )

    query = start()
    try:
        for i, rows in enumerate(batches):
            if restart_at == i:
                if relocate is None:
                    query.stop()
                else:
                    run.checkpoint = relocate(query, run.checkpoint)
                query = start()
            if before_batch is not None:
                before_batch(i)
            # One file per batch, moved into place whole: a trigger never sees half a batch.
            body = "".join(json.dumps(r) + "\n" for r in rows)
            tmp = src / f".batch-{first_file + i:04d}.json.tmp"
            tmp.write_text(body)
            tmp.rename(src / f"batch-{first_file + i:04d}.json")
            query.processAllAvailable()
            if query.lastProgress:
                run.progress.append(query.lastProgress)
            if after_batch is not None:
                after_batch(i, query)
    finally:
        query.stop()
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    if query.exception() is not None:
        raise query.exception()
    return run


def audit_checkpoint(spark, checkpoint: Path | str, retained: int) -> list[dict]:
    """rockstate's JVM audit of every store: files referenced, retained versions loadable."""
    jvm = spark.sparkContext._jvm
    reports = json.loads(jvm.io.rockstate.testing.StoreAudit.auditCheckpointJson(
        str(checkpoint), retained))
    assert reports, f"no rockstate store found under {checkpoint}"
    return reports


def assert_checkpoint_sound(spark, checkpoint: Path | str, retained: int,
                            orphans_allowed: bool = False) -> None:
    """Every referenced file present, the newest ``retained`` versions load, no strays."""
    for r in audit_checkpoint(spark, checkpoint, retained):
        assert not r["missing"] and not r["errors"], r
        assert len(r["loaded"]) == min(retained, len(r["versions"])), r
        if not orphans_allowed:
            assert not r["unreferenced"], r


def state_frame(spark, checkpoint: Path | str, **options: str):
    """Spark's state data source over a checkpoint, with ``options``."""
    reader = spark.read.format("statestore")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(checkpoint))


def state_rows(spark, checkpoint: Path, **options: str) -> list[tuple]:
    """The latest committed state of an operator, read with Spark's state data source."""
    df = state_frame(spark, checkpoint, **options)
    # transformWithState's list and map state variables have columns of their own.
    cols = [c for c in df.columns if c in ("key", "value", "list_value", "user_map_key",
                                           "user_map_value", "partition_id")]
    return sorted((tuple(_ttl_set(v) for v in r) for r in df.select(*cols).collect()), key=_key)


def _ttl_set(value):
    """A transformWithState value with a TTL keeps its expiry time, which is wall-clock time:
    compared as "set", not as a number."""
    from pyspark.sql import Row

    if isinstance(value, Row) and "ttlExpirationMs" in value.__fields__:
        d = value.asDict()
        d["ttlExpirationMs"] = d["ttlExpirationMs"] is not None and d["ttlExpirationMs"] > 0
        return tuple(sorted(d.items()))
    return value


def assert_same_outputs(oracle: StreamRun, mine: StreamRun, name: str = "query") -> None:
    """Batch for batch, but a batch without output does not count: whether Spark runs a
    no-data batch before or after the next file lands depends on timing (seen on S3: an empty
    no-data batch ahead of a data batch shifted every later batch id by one)."""
    assert _with_output(mine.outputs) == _with_output(oracle.outputs), \
        f"{name}: outputs differ from the oracle:\n" + _output_diff(oracle.outputs, mine.outputs)


def _with_output(outputs: dict[int, list[tuple]]) -> list[list[tuple]]:
    """The outputs of the batches that had any, in batch order."""
    return [rows for _, rows in sorted(outputs.items()) if rows]


def _output_diff(oracle: dict[int, list[tuple]], mine: dict[int, list[tuple]]) -> str:
    """The batches whose output differs, both sides' rows: enough to tell a shifted batch
    boundary from a lost or extra row."""
    lines = []
    for b in sorted(set(oracle) | set(mine)):
        if oracle.get(b) != mine.get(b):
            lines.append(f"batch {b}: oracle {oracle.get(b)}\n{'':>{len(str(b)) + 7}}"
                         f"mine   {mine.get(b)}")
    return "\n".join(lines)


def assert_same_as_oracle(spark, build, batches, *, workdir: Path, name: str, schema: str,
                          output_mode: str = "update", restart_at: int | None = 2,
                          sources: int = 1, state_options: Sequence[dict] = ({},),
                          confs: dict[str, str] | None = None,
                          checkpoint_root: str | None = None,
                          storage_options: dict | None = None,
                          rockstate_confs: dict[str, str] | None = None,
                          oracle_provider: str = SPARK_HDFS_CLASS,
                          relocate: Callable[[Any, Path | str], Path | str] | None = None):
    """Runs the query on the oracle (HDFSBackedStateStoreProvider unless told) and on
    rockstate; both must agree.

    ``checkpoint_root`` (a URL) puts rockstate's checkpoint there, and ``storage_options``
    are fsspec's options to read it; the oracle's stays on local disk. ``rockstate_confs``
    apply to rockstate's run only (Spark's checkpoint format 2, which the oracle lacks), and
    so does ``relocate`` (``run_stream``): the oracle runs the whole input in one place."""
    import rockstate

    runs = {
        p: run_stream(spark, p, build, batches, workdir=workdir, name=f"{name}-{label}",
                      schema=schema, output_mode=output_mode, restart_at=restart_at,
                      sources=sources,
                      confs={**(confs or {}),
                             **(rockstate_confs or {} if p != oracle_provider else {})},
                      checkpoint=f"{checkpoint_root}/{name}-{label}"
                      if checkpoint_root and p != oracle_provider else None,
                      relocate=relocate if p != oracle_provider else None)
        for label, p in (("oracle", oracle_provider), ("rockstate", rockstate.PROVIDER_CLASS))
    }
    oracle, mine = runs[oracle_provider], runs[rockstate.PROVIDER_CLASS]
    readable = str(mine.checkpoint).replace("s3a://", "s3://", 1).replace("rsfault://", "", 1)
    assert rockstate.provider_class(readable, storage_options) == \
        rockstate.PROVIDER_CLASS
    assert oracle.all_rows(), f"{name}: the oracle produced no output; the case tests nothing"
    assert_same_outputs(oracle, mine, name)
    assert len(mine.outputs) >= len(batches), f"{name}: expected a result for every batch"
    for opts in state_options:
        assert state_rows(spark, oracle.checkpoint, **opts), f"{name}: oracle state is empty"
        assert state_rows(spark, mine.checkpoint, **opts) == \
            state_rows(spark, oracle.checkpoint, **opts), f"{name}: state {opts} differs"
    assert_checkpoint_sound(spark, mine.checkpoint, retained=2)
    return oracle, mine
