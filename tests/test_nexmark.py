"""Nexmark on Spark: the generator follows Nexmark's model and is a pure function of the seed
and the index; queries give their oracle's output (Flink's SQL over a batch of the same events)
on rockstate across a stop and restart and across an executor SIGKILL; the runner's CLI writes
its table and JSON, comparing two providers' outputs. Every query against its oracle is in the
long tier (tests/long/test_nexmark_every_query.py): each one's operators run here in
tests/test_operators.py, each against its own oracle."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from rockstate import cli
from rockstate.nexmark.benchmark import parse_queries, run_benchmark
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.queries import NOT_EXPRESSIBLE, QUERIES
from rockstate.nexmark.run import RunPlan, run_query
from rockstate.nexmark.views import batch_views

# Small: 20,000 events over 20 s of event time (two 10 s windows, a few sessions), 5 batches.
CONFIG = NexmarkConfig(events=20_000, event_rate=1_000)


def plan_in(workdir, **kw) -> RunPlan:
    return RunPlan(root=str(workdir), batch_events=5_000, partitions=2, **kw)


def test_events_follow_nexmark_and_regenerate_from_seed_and_index(spark):
    config = NexmarkConfig(events=50_000)
    v = batch_views(spark, config)
    people, auctions, bids = v.person.count(), v.auction.count(), v.bid.count()
    assert (people, auctions, bids) == (1_000, 3_000, 46_000)  # 1 : 3 : 46
    a = v.auction.agg(F.min("category"), F.max("category"), F.min("id"), F.max("id"),
                      F.max(F.unix_millis("expires") - F.unix_millis("dateTime"))).first()
    assert (a[0], a[1], a[2], a[3]) == (10, 14, 1000, 3999)
    assert a[4] <= config.max_auction_ms
    # Half of the bids on hot auctions (a multiple of 100 above the first id, the latest
    # batch's first), three quarters from hot bidders (the batch's second person).
    b = v.bid.agg(F.avg(((F.col("auction") - 1000) % 100 == 0).cast("int")),
                  F.avg(((F.col("bidder") - 1000) % 100 == 1).cast("int")),
                  F.avg(F.col("channel").isin("Google", "Facebook", "Baidu", "Apple")
                        .cast("int"))).first()
    assert 0.45 < b[0] < 0.56 and 0.70 < b[1] < 0.80 and 0.45 < b[2] < 0.55
    # No bid's person or auction is from the future by more than Nexmark's lead of 10.
    assert v.bid.where("bidder > 1000 + 50000 / 50 + 10").count() == 0
    # Delays stay under the watermark: no event is later than 3 s behind its place.
    assert v.person.where("dateTime < TIMESTAMP '2015-07-14 23:59:57'").count() == 0
    # The same seed gives the same events; another seed others with the same ids.
    again = batch_views(spark, config).bid
    assert again.exceptAll(v.bid).count() == 0
    other = batch_views(spark, NexmarkConfig(events=50_000, seed=7)).bid
    assert other.exceptAll(v.bid).count() > 40_000


@pytest.mark.parametrize("query", ["q4", "q19"])
def test_a_stop_and_restart_keeps_the_oracles_output(spark, workdir, query):
    result = run_benchmark(spark, [query], ["rockstate"], CONFIG, plan_in(workdir, stop_after=2))
    outcome = result.outcomes[0]
    assert outcome.oracle_equal, outcome.differences


def test_an_executor_sigkill_keeps_the_oracles_output_and_is_timed(cluster_spark, workdir):
    # q9 (a join, then an aggregation); the torture suite kills executors under
    # applyInPandasWithState, q18's operator.
    result = run_benchmark(cluster_spark, ["q9"], ["rockstate"], CONFIG,
                           plan_in(workdir, kill_after=2))
    for o in result.outcomes:
        assert o.oracle_equal, (o.query, o.differences)
        assert o.runs[0].recovery_s is not None and o.runs[0].recovery_s > 0


def test_not_expressible_queries_are_named_and_refused(spark, workdir):
    assert {"q6", "q12", "q15", "q16"} <= set(NOT_EXPRESSIBLE)
    with pytest.raises(ValueError, match="q15 is not run: distinct counts"):
        parse_queries("q4,q15")
    with pytest.raises(ValueError, match="unknown query q99"):
        parse_queries("q99")
    # Spark's own refusal of q15's distinct counts, the reason it is not run.
    from pyspark.errors import AnalysisException

    views = _stream_views(spark, workdir)
    with pytest.raises(AnalysisException, match=r"(?i)distinct"):
        (views.bid.groupBy(F.window("dateTime", "1 day"))
         .agg(F.countDistinct("bidder")).writeStream.format("noop")
         .option("checkpointLocation", str(workdir / "q15")).start())


def _stream_views(spark, workdir):
    from rockstate.nexmark.source import IndexStream
    from rockstate.nexmark.views import stream_views

    return stream_views(spark, IndexStream(CONFIG.events, 5_000, 2), CONFIG)


def test_the_cli_runs_each_run_in_its_own_jvm_and_prints_json_and_a_page(spark, workdir,
                                                                           capsys):
    out = workdir / "q7.json"
    page = workdir / "q7.html"
    code = cli.main(["nexmark", "--queries", "q7", "--events", "20000", "--event-rate", "1000",
                     "--batch-events", "5000", "--partitions", "2", "--master", "local[2]",
                     "--providers", "rockstate,spark-hdfs", "--checkpoint-root", str(workdir / "r"),
                     "--json", str(out), "--html", str(page), "--warmup-events", "2000",
                     "--repeats", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "| q7 | rockstate |" in printed and "equal, = oracle" in printed
    assert "Cores x Time by thread group" in printed
    data = json.loads(out.read_text())
    assert data["isolated"] and data["repeats"] == 1
    (q7,) = data["queries"]
    assert q7["providers_equal"] and q7["oracle_equal"]
    runs = q7["runs"]
    assert [r["provider"] for r in runs] == ["rockstate", "spark-hdfs"]
    assert all(r["cpu_s"] > 0 and r["batches"] == 5 for r in runs)
    # Each run had a driver JVM of its own, neither of them this test's.
    assert len({r["driver_pid"] for r in runs} | {spark.sparkContext._gateway.proc.pid}) == 3
    # Every run's CPU is accounted for by thread group, the tasks' share among them.
    for r in runs:
        groups = r["cpu_by_thread_group"]
        assert groups["tasks"] > 0 and groups["JIT"] > 0
        assert abs(sum(groups.values()) - r["cpu_s"]) <= 0.05 * r["cpu_s"] + 0.1
    assert "q15" in data["not_expressible"]
    assert "Plotly" in page.read_text() and "Cores x Time by thread group" in page.read_text()
    assert cli.main(["nexmark", "--queries", "q99", "--events", "10"]) == 2


def test_a_run_writes_its_output_once_per_batch_with_the_noop_sink_writing_none(spark,
                                                                                 workdir):
    figures = run_query(spark, QUERIES["q7"], "rockstate", CONFIG,
                        plan_in(workdir, keep_output=False))
    assert figures.output_rows is None and figures.batches == 5
    assert not (workdir / "output").exists()
