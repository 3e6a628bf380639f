"""The long tier's Nexmark run: every stateful query Spark can express gives its oracle's output
(Flink's SQL over a batch of the same events) on rockstate. ``bash dev/run-tests long`` runs
it; CI runs each query's operators against their own oracles (tests/test_operators.py) and two
queries through a restart and an executor kill (tests/test_nexmark.py)."""

from __future__ import annotations

from rockstate.nexmark.benchmark import parse_queries, run_benchmark
from test_nexmark import CONFIG, plan_in


def test_every_query_equals_its_oracle_on_rockstate(spark, workdir):
    # The oracle is Flink's SQL over a batch of the same events, not a provider: rockstate's
    # output equal to it is the property. (Spark's RocksDB provider gives the same output:
    # `rockstate nexmark` compares every provider it runs; the CLI test below runs two.)
    queries = parse_queries("all")
    assert set(queries) >= {"q3", "q4", "q5", "q7", "q8", "q9", "q11", "q17", "q18", "q19",
                            "q20"}
    result = run_benchmark(spark, queries, ["rockstate"], CONFIG, plan_in(workdir))
    for o in result.outcomes:
        assert o.oracle_equal, (o.query, o.differences)
        (run,) = o.runs
        assert run.output_rows > 0, o.query
        assert run.batches == 5 and run.checkpoint_files > 0, o.query
    # The state operators held state (the runs were stateful, not pass-throughs).
    assert all(r.state_rows_peak > 0 for o in result.outcomes for r in o.runs)
