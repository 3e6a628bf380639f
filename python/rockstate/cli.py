"""The ``rockstate`` command: build the jar, run the demo, print the Spark configuration, and
inspect, verify, read, export or report on a checkpoint location without Spark, take and
restore savepoints, and rescale, migrate, forget keys from or transform a stopped query's
state (a Spark job)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rockstate.errors import RockstateError
from rockstate.tools.progress import StoreProgress

if TYPE_CHECKING:
    from rockstate.checkpoint.location import CheckpointLocation


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.run not in (_build_command, _demo_command):  # those pass theirs on
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.run(args, rest)
    except RockstateError as e:
        _fail(args.command, str(e))
        return 2
    except KeyboardInterrupt:
        _fail(args.command, "interrupted")
        return 130
    except Exception as e:  # a bug, not bad input: still one line, the traceback on request
        if os.environ.get("ROCKSTATE_DEBUG"):
            raise
        _fail(args.command, f"unexpected {type(e).__name__}: {e} (this is a rockstate bug: "
              "rerun with ROCKSTATE_DEBUG=1 for the traceback and report it)")
        return 3


def version_text() -> str:
    """rockstate's version, the Spark line of the installed pyspark and of the jar it runs, and
    the jar's Maven coordinates (``--packages``) for that line."""
    from rockstate.session import jar, spark_lines
    from rockstate.session.version import VERSION

    try:
        import pyspark

        installed = (f"pyspark {pyspark.__version__} "
                     f"(Spark {spark_lines.line_of(pyspark.__version__)})")
    except ImportError:
        installed = "no pyspark"
    built = jar.JARS_DIR / jar.JAR_NAME
    line = jar.jar_line(built) if built.is_file() else None
    if line is None:
        return f"rockstate {VERSION}; {installed}; no jar built (rockstate build)"
    return (f"rockstate {VERSION}; {installed}; jar for Spark {line}; Maven "
            f"io.rockstate:rockstate-spark-{line}_2.13:{VERSION}")


class _Version(argparse.Action):
    """``--version``: the text on one line (argparse's own wraps it), computed only when
    asked (it imports pyspark)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_text())
        parser.exit()


# Every command: its name, what it does, how it runs, and where its arguments are declared
# (beside the function that runs it). An offline command reads a location with fsspec: its
# first argument, named here, and its --storage-option.
_CHECKPOINT = ("location", "the query's checkpointLocation (path or fsspec URL)")
_SAVEPOINT = ("savepoint", "the savepoint (path or fsspec URL)")


def _parser() -> argparse.ArgumentParser:
    """Every command, each with the function that runs it (``args.run``)."""
    parser = argparse.ArgumentParser(prog="rockstate", description="rockstate tools")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print rockstate's version, its Spark line and Maven coordinates")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: tuple[tuple[str, str, Callable[..., int], Callable[[Any], None] | None,
                          tuple[str, str] | None], ...] = (
        ("build", "compile the JVM shim jar against the installed pyspark", _build_command,
         None, None),
        ("demo", "run a streaming aggregation on rockstate", _demo_command, None, None),
        ("spark-defaults", "print spark-defaults.conf lines for rockstate",
         _spark_defaults_command, None, None),
        ("connect-server", "run a Spark Connect server that serves rockstate, in the "
         "foreground (Ctrl-C stops it)", _connect_server_command, _connect_server_arguments,
         None),
        ("nexmark", "run Nexmark's stateful queries on state providers side by side (a Spark "
         "job; docs/nexmark.md)", _nexmark_command, _nexmark_arguments, None),
        ("inspect", "list a checkpoint's stores, versions and snapshots", _checkpoint_command,
         _inspect_arguments, _CHECKPOINT),
        ("verify", "check every file a checkpoint's versions need; exit 1 on a problem",
         _checkpoint_command, _verify_arguments, _CHECKPOINT),
        ("read", "print an operator's state (key, value, partition)", _state_command,
         _read_arguments, _CHECKPOINT),
        ("changes", "print the changes batches made to an operator's state (Spark's change "
         "feed)", _changes_command, _changes_arguments, _CHECKPOINT),
        ("export", "write every operator's state as parquet datasets", _state_command,
         _export_arguments, _CHECKPOINT),
        ("report", "write the checkpoint history as one HTML page with charts (opens with no "
         "network)", _report_command, _report_arguments, _CHECKPOINT),
        ("savepoint", "copy a query's checkpoint at its newest committed batch to a "
         "self-contained, checked savepoint", _savepoint_command, _savepoint_arguments,
         _CHECKPOINT),
        ("restore", "make a new checkpoint location from a savepoint (the savepoint is only "
         "read)", _restore_command, _restore_arguments, _SAVEPOINT),
        ("rescale", "rewrite a stopped query's state for a new number of shuffle partitions "
         "(runs a Spark job)", _rewrite_command, _rescale_arguments, None),
        ("migrate", "move a stopped query's state to another state store provider, "
         "optionally rescaling it (runs a Spark job)", _rewrite_command, _migrate_arguments,
         None),
        ("forget", "remove every row of given keys from a stopped query's state, in every "
         "operator (runs a Spark job)", _forget_command, _forget_arguments, None),
        ("transform", "rewrite one operator's state of a stopped query with a SQL query over "
         "its rows (runs a Spark job)", _transform_command, _transform_arguments, None),
    )
    for name, text, run, arguments, reads in commands:
        p = sub.add_parser(name, help=text)
        p.set_defaults(run=run)
        if reads is not None:
            _reads(p, *reads)
        if arguments is not None:
            arguments(p)
    return parser


def _reads(p: argparse.ArgumentParser, name: str, text: str) -> None:
    """An offline command's location argument and its storage options."""
    p.add_argument(name, help=text)
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   dest="storage_options",
                   help=f"an fsspec option for the {name}'s file system (repeat it; a "
                        "VALUE that is JSON is read as JSON, e.g. anon=true or "
                        "client_kwargs='{\"endpoint_url\": \"http://...\"}')")


def _target(p: argparse.ArgumentParser, name: str, text: str) -> None:
    p.add_argument(name, help=text)
    p.add_argument("--target-option", action="append", default=[], metavar="KEY=VALUE",
                   dest="target_options",
                   help=f"an fsspec option for the {name}'s file system (as --storage-option)")


def _expect_digest(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expect-digest", metavar="HEX",
                   help="the digest `rockstate savepoint` printed (the SHA-256 of the "
                        "savepoint's _savepoint.json): a savepoint with another is damaged, "
                        "even one rewritten end to end")


def _at_least_one(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return n


def _key_values(pairs: list[str], what: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a dict; a pair without ``=`` or a key is refused, naming it."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RockstateError(f"the {what} {pair!r} is not KEY=VALUE")
        out[key] = value
    return out


def _options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as fsspec storage options; a VALUE that parses as JSON is JSON."""
    out: dict[str, Any] = {}
    for key, value in _key_values(pairs, "option").items():
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _build_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.session.build import main as build_main

    return build_main(rest)


def _demo_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.demo import main as demo_main

    return demo_main(rest)


def _nexmark_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", default="all", help="comma-separated queries, or all (default)")
    p.add_argument("--providers", default="rockstate,spark-rocksdb-changelog",
                   help="comma-separated: rockstate, spark-rocksdb-changelog (Spark's RocksDB "
                        "provider, changelog checkpointing on), spark-rocksdb (its defaults), "
                        "spark-hdfs (rockstate.session.providers)")
    p.add_argument("--events", type=_at_least_one, default=1_000_000)
    p.add_argument("--seed", type=int, default=0, help="picks the events")
    p.add_argument("--event-rate", type=_at_least_one, default=10_000,
                   help="events a second of event time (default 10,000, Nexmark's)")
    p.add_argument("--batch-events", type=_at_least_one,
                   help="events a batch (default: events / 20)")
    p.add_argument("--warmup-events", type=int, help="events of the unmeasured run before each "
                   "measured one, in its JVM (default: events / 10, at most 200,000; 0: none)")
    p.add_argument("--repeats", type=_at_least_one, default=2,
                   help="runs of each query on each provider, the providers alternating (A B, "
                        "B A, ...); the table gives the medians (default 2)")
    p.add_argument("--same-jvm", action="store_true",
                   help="run everything in one Spark application, as before each run had its "
                        "own: quicker, but the order of the runs biases the figures")
    p.add_argument("--partitions", type=_at_least_one, default=8,
                   help="state partitions and generating tasks (default 8)")
    p.add_argument("--rate", type=float, help="feed this many events a second (a batch each "
                   "batch-events / rate seconds; default: as fast as Spark goes, Nexmark's "
                   "Cores x Time)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--checkpoint-root", help="where checkpoints and outputs go (a path or a URL "
                   "such as s3a://bucket/nexmark; default: a temporary folder)")
    p.add_argument("--kill-after", type=int, metavar="BATCHES", help="SIGKILL an executor after "
                   "this many batches and measure the recovery (local-cluster or spark:// "
                   "master)")
    p.add_argument("--no-check", action="store_true", help="write no output (a no-op sink, "
                   "Nexmark's blackhole) and compare nothing")
    p.add_argument("--no-oracle", action="store_true",
                   help="compare the providers' outputs, not the batch oracle's")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--html", metavar="FILE", help="write the figures as a page")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="any other Spark conf (repeat it)")


def _nexmark_command(args: argparse.Namespace, rest: list[str]) -> int:
    import tempfile

    from pyspark.sql import SparkSession

    from rockstate.nexmark.benchmark import (
        parse_queries,
        run_benchmark,
        run_isolated_benchmark,
        table,
        thread_table,
        write_json,
    )
    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.page import write_page
    from rockstate.nexmark.run import RunPlan
    from rockstate.nexmark.session import nexmark_session
    from rockstate.session import local_cluster
    from rockstate.session.providers import parse

    try:
        queries, providers = parse_queries(args.queries), parse(args.providers)
        config = NexmarkConfig(events=args.events, seed=args.seed, event_rate=args.event_rate)
    except ValueError as e:
        raise RockstateError(str(e)) from None
    root = args.checkpoint_root or tempfile.mkdtemp(prefix="rockstate-nexmark-")
    plan = RunPlan(root=root, batch_events=args.batch_events or max(1, args.events // 20),
                   partitions=args.partitions, rate=args.rate, kill_after=args.kill_after,
                   keep_output=not args.no_check)
    confs = _key_values(args.conf, "conf")
    warmup = (min(args.events // 10, 200_000) if args.warmup_events is None
              else args.warmup_events)
    print(f"rockstate nexmark: {', '.join(queries)} on {', '.join(providers)}, "
          f"{args.events:,} events, {args.repeats} run(s) each"
          f"{' in one JVM' if args.same_jvm else ', each in a JVM of its own'}, in {root}",
          flush=True)

    def heard(r) -> None:
        print(f"  {r.query} on {r.provider} (run {r.repeat + 1}): {r.time_s:.1f} s, "
              f"{r.cpu_s} CPU s", flush=True)

    ours = SparkSession.getActiveSession() is None  # a caller's session is left running
    made: list = []

    def session():
        made.append(nexmark_session(args.master, args.partitions, confs))
        return made[-1]

    try:
        if args.same_jvm:
            result = run_benchmark(session(), queries, providers, config, plan,
                                   oracle=not args.no_oracle, warmup_events=warmup,
                                   progress=heard, repeats=args.repeats)
        else:
            result = run_isolated_benchmark(queries, providers, config, plan, args.master,
                                            confs, session, oracle=not args.no_oracle,
                                            progress=heard, warmup_events=warmup,
                                            repeats=args.repeats)
    finally:
        if ours and made:
            local_cluster.stop(made[-1])  # and what local-cluster's workers left in Spark's home
    text = table(result)
    print(text)
    print("\nCores x Time by thread group (CPU seconds, medians):")
    print(thread_table(result))
    if args.json:
        write_json(result, args.json)
    if args.html:
        write_page(result, args.html, text)
    if not result.all_equal:
        _fail("nexmark", "outputs differ: see the table's outputs column")
        return 1
    return 0


def _spark_defaults_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.session.configure import spark_defaults

    print(spark_defaults())
    return 0


def _connect_server_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=15002,
                   help="the port clients connect to (sc://host:PORT; default 15002)")
    p.add_argument("--host", default=None,
                   help="the address it listens on (default 127.0.0.1: this machine only); any "
                        "other needs a token: Spark's spark.connect.authenticate.token or the "
                        "SPARK_CONNECT_AUTHENTICATE_TOKEN environment variable, else one is "
                        "generated and printed")
    p.add_argument("--master", default="local[*]",
                   help="where the server's queries run (default: local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="any other Spark conf for the server (repeat it)")
    p.add_argument("--print", action="store_true", dest="print_only",
                   help="print the command (and the start-connect-server.sh one that runs it "
                        "as a daemon) instead of running it")


def _connect_server_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.session.connect_server import TOKEN_ENV, ConnectServer, shell_line, spark_home
    from rockstate.session.jar import jar_path

    try:
        server = ConnectServer.of(args.master, args.port, _key_values(args.conf, "conf"),
                                  args.host, dict(os.environ))
    except RockstateError as e:
        _fail("connect-server", str(e))
        return 2
    home, jar = spark_home(), str(jar_path())
    cmd = server.command(home, jar)
    if args.print_only:
        if server.exposed and not os.environ.get(TOKEN_ENV):
            # A printed command must not carry a secret, nor start a server with none.
            _fail("connect-server", f"--host {server.host} needs a token: set {TOKEN_ENV} in "
                  "the environment the printed commands run in, and run --print with it set")
            return 2
        print(shell_line(cmd))
        print(shell_line(server.daemon_command(home, jar)))
        return 0
    print(server.banner() + f" (master {args.master})", file=sys.stderr, flush=True)
    env = server.environment(dict(os.environ, SPARK_HOME=str(home)))
    os.execvpe(cmd[0], cmd, env)  # the server becomes this process: signals reach it


def _location(args: argparse.Namespace) -> CheckpointLocation:
    from rockstate.checkpoint.location import open_location

    return open_location(args.location, _options(args.storage_options))


def _fail(command: str, message: str) -> None:
    """One line on stderr: the command and what is wrong (messages name the fix)."""
    print(f"rockstate {command}: " + " ".join(message.split()), file=sys.stderr)


def _require_state(location: CheckpointLocation) -> None:
    """An offline command given a location with no state it can read says so and fails,
    rather than printing nothing and succeeding."""
    from rockstate.checkpoint import spark_rocksdb
    from rockstate.tools.savepoint_manifest import is_savepoint

    if location.stores() or is_savepoint(location) or any(
            spark_rocksdb.partitions(location, op, "default") for op in location.operators()):
        return
    what = "no stateful operator" if not location.operators() else \
        f"operators {location.operators()}, but no rockstate or Spark RocksDB store"
    provider = ""
    try:
        from rockstate.checkpoint.offsets import provider_class

        provider = f"; its offset log names the provider {provider_class(location)}"
    except RockstateError:
        pass
    raise RockstateError(f"{location.url} holds {what}{provider}. Give the checkpointLocation "
                         "of a stateful query run on rockstate or on Spark's "
                         "RocksDBStateStoreProvider.")


def _savepoint_arguments(p: argparse.ArgumentParser) -> None:
    _target(p, "target", "where to write it (new; path or fsspec URL)")


def _savepoint_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.savepoint import savepoint

    sp = savepoint(args.location, args.target, storage_options=_options(args.storage_options),
                   target_options=_options(args.target_options))
    print(f"savepoint of batch {sp.batch_id} (state version {sp.state_version}) written to "
          f"{sp.url}: {len(sp.files)} files, {sp.bytes} bytes, checked")
    # Only a digest kept apart from the savepoint detects one rewritten end to end.
    print(f"digest {sp.digest} (SHA-256 of _savepoint.json): keep it apart from the savepoint "
          "and pass it to `rockstate verify` and `rockstate restore` as --expect-digest")
    return 0


def _restore_arguments(p: argparse.ArgumentParser) -> None:
    _target(p, "target", "the new checkpointLocation to start the query with")
    p.add_argument("--keep-query-id", action="store_true",
                   help="keep the saved query's id (default: a new id, so forks and the "
                        "original can run side by side)")
    _expect_digest(p)


def _restore_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.restore import restore

    restore(args.savepoint, args.target, new_query_id=not args.keep_query_id,
            storage_options=_options(args.storage_options),
            target_options=_options(args.target_options), expect_digest=args.expect_digest)
    print(f"{args.target} restored from {args.savepoint}; start the query with it as its "
          "checkpointLocation")
    return 0


def _spark_job_arguments(p: argparse.ArgumentParser) -> None:
    """What every command that rewrites a stopped query's state takes: the location, and where
    its Spark job runs."""
    p.add_argument("location", help="the query's checkpointLocation, as Spark reads it")
    p.add_argument("--master", default="local[*]",
                   help="where the Spark job runs (default: local[*]); conf for it goes in "
                        "spark-defaults.conf or SPARK_CONF_DIR as usual")


@contextlib.contextmanager
def _spark_job(args: argparse.Namespace) -> Iterator[Any]:
    """A rockstate-configured session on ``--master`` for the command's job, stopped after."""
    from pyspark.sql import SparkSession

    from rockstate.session.configure import configure

    spark = configure(SparkSession.builder.master(args.master)
                      .appName(f"rockstate {args.command}")).getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()


def _rescale_arguments(p: argparse.ArgumentParser, required: bool = True) -> None:
    _spark_job_arguments(p)
    p.add_argument("--partitions", type=int, required=required,
                   help="the new number of shuffle partitions")


def _migrate_arguments(p: argparse.ArgumentParser) -> None:
    from rockstate.session.providers import ROCKSTATE, SPARK_ROCKSDB

    _rescale_arguments(p, required=False)
    p.add_argument("--to", required=True, choices=[ROCKSTATE, SPARK_ROCKSDB],
                   help="the provider the query continues on")


def _rewrite_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.rewrite import migrate, rescale

    with _spark_job(args) as spark:
        if args.command == "rescale":
            r = rescale(spark, args.location, args.partitions)
        else:
            r = migrate(spark, args.location, to=args.to, partitions=args.partitions)
    print(f"{args.location}: batch {r.batch_id} rewrote the state of batch {r.read_batch}: "
          f"{r.partitions_before} -> {r.partitions} partitions, {r.provider_before} -> "
          f"{r.provider}, {r.keys} keys in {len(r.stores)} stores, {r.seconds:.1f} s. Start "
          "the query with this checkpointLocation.")
    return 0


def _forget_arguments(p: argparse.ArgumentParser) -> None:
    _spark_job_arguments(p)
    p.add_argument("--keys", required=True,
                   help="a parquet file or folder, or a CSV file with a header line, of the "
                        "keys to forget")
    p.add_argument("--column", action="append", required=True,
                   help="a key column of the keys file (give it once per column; a row "
                        "matches when all of them are equal)")
    p.add_argument("--purge-history", action="store_true",
                   help="also remove the older versions that still hold the keys (the "
                        "query's checkpoint can then restart only from the new batch)")


def _keys_columns(path: str) -> list[str]:
    """The columns of a keys file, read before Spark starts: a CSV file's header line, a
    parquet file's (or folder's) schema."""
    import csv

    import pyarrow.dataset as ds

    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8") as f:
            return next(csv.reader(f), [])
    return list(ds.dataset(path, format="parquet").schema.names)


def _forget_command(args: argparse.Namespace, rest: list[str]) -> int:
    columns = _keys_columns(args.keys)
    missing = [c for c in args.column if c not in columns]
    if missing:
        _fail("forget", f"{args.keys} has no column {', '.join(missing)}; its columns are "
              f"{', '.join(columns)}.")
        return 2
    from rockstate.tools.forget import forget

    with _spark_job(args) as spark:
        keys = (spark.read.option("header", "true").csv(args.keys)
                if args.keys.endswith(".csv") else spark.read.parquet(args.keys))
        r = forget(spark, args.location, keys.select(*args.column),
                   purge_history=args.purge_history)
    print(f"{args.location}: batch {r.rewrite.batch_id} holds the state of batch "
          f"{r.rewrite.read_batch} without the keys ({', '.join(r.columns)}): "
          f"{r.rows_removed} rows removed.")
    for s in r.stores:
        print(f"  operator {s.operator_id} ({s.operator_name}) {s.store_name}: "
              f"{s.rows_removed} of {s.rows_before} rows removed")
    if r.purged:
        print(f"  --purge-history removed {r.purged} files of older versions.")
    print(f"  {r.history.describe()}" + (
        "; Spark's retention drops them (spark.sql.streaming.minBatchesToRetain batches "
        "later), or run again with --purge-history." if r.history.files else "."))
    print("Start the query with this checkpointLocation.")
    return 0


def _transform_arguments(p: argparse.ArgumentParser) -> None:
    _spark_job_arguments(p)
    p.add_argument("--operator", type=int, required=True,
                   help="the stateful operator's id (rockstate inspect lists them)")
    p.add_argument("--sql", required=True,
                   help="a SELECT over the view `state` (columns key and value, as rockstate "
                        "read shows them) returning key and value of the same types")
    p.add_argument("--value-schema", metavar="DDL",
                   help="the value's new schema, e.g. 'sum BIGINT, max INT' (an aggregation "
                        "that gains a column); the SELECT returns values of it")


def _transform_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.transform import transform

    def by_sql(rows: Any) -> Any:
        rows.createOrReplaceTempView("state")
        return rows.sparkSession.sql(args.sql)

    with _spark_job(args) as spark:
        r = transform(spark, args.location, args.operator, by_sql,
                      value_schema=args.value_schema)
    print(f"{args.location}: batch {r.rewrite.batch_id} holds the state of batch "
          f"{r.rewrite.read_batch} with operator {r.operator_id} ({r.store.operator_name}) "
          f"transformed: {r.store.rows_read} rows in, {r.store.keys} rows written. Start the "
          "query with this checkpointLocation.")
    return 0


def _inspect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def _verify_arguments(p: argparse.ArgumentParser) -> None:
    _inspect_arguments(p)
    _expect_digest(p)


def _checkpoint_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.savepoint_manifest import is_savepoint, read_savepoint

    location = _location(args)
    _require_state(location)
    if args.command == "inspect":
        from rockstate.checkpoint.operator_metadata import operator_kinds

        summary = location.summary()
        summary["operatorKinds"] = {str(op): kind
                                    for op, kind in operator_kinds(location).items()}
        if is_savepoint(location):
            sp = read_savepoint(location)
            summary["savepoint"] = {"batchId": sp.batch_id, "stateVersion": sp.state_version,
                                    "queryId": sp.query_id, "source": sp.source,
                                    "createdAt": sp.created_at, "files": len(sp.files),
                                    "bytes": sp.bytes}
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        if "savepoint" in summary:
            sp_info = summary["savepoint"]
            print(f"savepoint of batch {sp_info['batchId']} (state version "
                  f"{sp_info['stateVersion']}), taken {sp_info['createdAt']} from "
                  f"{sp_info['source']}: {sp_info['files']} files, {sp_info['bytes']} bytes")
        kinds = summary["operatorKinds"]
        print(f"{summary['location']}: operators "
              + ", ".join(f"{op} ({kinds[str(op)]})" for op in summary["operators"]))
        print(f"{'op':>3} {'part':>4} {'store':<26} {'versions':<14} {'snapshots':<14} "
              f"{'keys':>9}  column families")
        for s in summary["stores"]:
            v, snaps = s["versions"], s["snapshots"]
            print(f"{s['operator']:>3} {s['partition']:>4} {s['store']:<26} "
                  f"{_span(v):<14} {_span(snaps):<14} {s['numKeys']:>9}  "
                  f"{', '.join(s['columnFamilies'])}")
        if summary["checkpoints"]:
            print(f"completed checkpoints: {'version':>8} {'batch':>6} {'stores':>6} "
                  f"{'keys':>9} {'state bytes':>12}")
            for c in summary["checkpoints"]:
                print(f"{'':<22} {c['version']:>8} {c['batchId']:>6} {c['stores']:>6} "
                      f"{c['numKeys']:>9} {c['stateBytes']:>12}")
        return 0
    from rockstate.tools.verify import verify

    if args.json:
        report = verify(location, expect_digest=args.expect_digest)
    else:
        with StoreProgress(len(location.stores()), "checking") as progress:
            report = verify(location, progress=progress, expect_digest=args.expect_digest)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        for p in report.problems:
            print(f"PROBLEM {p}")
        print(f"{report.stores} stores, {report.versions} versions, "
              f"{report.checkpoints} completed checkpoints, {report.files_checked} "
              f"files ({report.bytes_checked} bytes) checked: "
              f"{'OK' if report.ok else f'{len(report.problems)} problems'}")
    return 0 if report.ok else 1


def _read_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--operator", type=int, default=0)
    p.add_argument("--store", default="default")
    p.add_argument("--version", type=int, help="state version (default: the newest)")
    p.add_argument("--partitions", help="comma-separated partition ids (default: all)")
    p.add_argument("--limit", type=int, default=20, help="rows to print (0: all)")
    p.add_argument("--state-var", help="a transformWithState operator's state variable")
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.add_argument("--workers", type=_at_least_one, help="processes that read a local "
                   "checkpoint's partitions (default: one per CPU; 1: this process)")


def _export_arguments(p: argparse.ArgumentParser) -> None:
    _target(p, "dest", "where to write (path or fsspec URL)")
    p.add_argument("--version", type=int, help="state version (default: the newest)")


def _state_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.checkpoint import spark_rocksdb
    from rockstate.tools.read import export, read_state, table_rows

    location = _location(args)
    _require_state(location)
    if args.command == "export":
        total = len(location.stores()) or sum(
            len(spark_rocksdb.partitions(location, op, "default"))
            for op in location.operators())
        with StoreProgress(total, "reading") as progress:
            paths = export(location, args.dest, version=args.version, progress=progress,
                           dest_options=_options(args.target_options))
        for path in paths:
            print(path)
        return 0
    partitions = [int(p) for p in args.partitions.split(",")] if args.partitions else None
    total = len([s for s in location.stores(args.operator) if s.name == args.store
                 and (partitions is None or s.partition in partitions)]) or len(
        spark_rocksdb.partitions(location, args.operator, args.store))
    with StoreProgress(total, "reading") as progress:
        table = read_state(location, operator=args.operator, version=args.version,
                           partitions=partitions, store=args.store, progress=progress,
                           state_var=args.state_var, workers=args.workers)
    shown = table_rows(table if args.limit == 0 else table.slice(0, args.limit))
    for row in shown:
        if args.json:
            print(json.dumps(row, default=str))
        else:
            rest = {k: v for k, v in row.items() if k not in ("key", "partition_id")}
            shown_value = rest["value"] if list(rest) == ["value"] else rest
            print(f"partition {row['partition_id']}: {json.dumps(row['key'], default=str)} -> "
                  f"{json.dumps(shown_value, default=str)}")
    print(f"{table.num_rows} rows" + (f", {len(shown)} shown" if len(shown) < table.num_rows
                                       else ""), file=sys.stderr)
    return 0


def _changes_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--operator", type=int, default=0)
    p.add_argument("--store", default="default")
    p.add_argument("--from", dest="from_batch", type=int, default=0,
                   help="first batch (default: 0)")
    p.add_argument("--to", dest="to_batch", type=int,
                   help="last batch (default: the newest every partition committed)")
    p.add_argument("--partitions", help="comma-separated partition ids (default: all)")
    p.add_argument("--limit", type=int, default=20, help="rows to print (0: all)")
    p.add_argument("--json", action="store_true", help="one JSON object per row")


def _changes_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.changes import read_changes
    from rockstate.tools.read import table_rows

    location = _location(args)
    _require_state(location)
    partitions = [int(p) for p in args.partitions.split(",")] if args.partitions else None
    table = read_changes(location, operator=args.operator, from_batch=args.from_batch,
                         to_batch=args.to_batch, partitions=partitions, store=args.store)
    shown = table_rows(table if args.limit == 0 else table.slice(0, args.limit))
    for row in shown:
        if args.json:
            print(json.dumps(row, default=str))
        else:
            value = "" if row["value"] is None else f" -> {json.dumps(row['value'], default=str)}"
            print(f"batch {row['batch_id']} partition {row['partition_id']}: "
                  f"{row['change_type']} {json.dumps(row['key'], default=str)}{value}")
    print(f"{table.num_rows} changes" + (f", {len(shown)} shown" if len(shown) < table.num_rows
                                          else ""), file=sys.stderr)
    return 0


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default="rockstate-report.html",
                   help="the HTML file to write (default: rockstate-report.html)")


def _report_command(args: argparse.Namespace, rest: list[str]) -> int:
    from rockstate.tools.report import report

    location = _location(args)
    _require_state(location)

    def progress(items: Iterable) -> Iterable:
        items = list(items)
        with StoreProgress(len(items), "reading manifests of") as bar:
            yield from bar.wrap(items)

    path = report(location, args.output, progress=progress)
    print(path)
    return 0


def _span(values: list[int]) -> str:
    if not values:
        return "-"
    return str(values[0]) if len(values) == 1 else f"{values[0]}..{values[-1]} ({len(values)})"


if __name__ == "__main__":
    sys.exit(main())
