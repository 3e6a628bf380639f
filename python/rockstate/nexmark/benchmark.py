"""``rockstate nexmark``: the chosen queries on the chosen providers over the same events, one
after the other in one Spark application, with each query's outputs compared (providers
against each other and against the oracle) and a table, JSON and a page of the figures."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rockstate.nexmark import compare
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.queries import NOT_EXPRESSIBLE, QUERIES
from rockstate.nexmark.run import RunFigures, RunPlan, run_query
from rockstate.session.providers import PROVIDERS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

    from rockstate.session.providers import ProviderSpec


@dataclass(frozen=True)
class QueryOutcome:
    """One query on every provider: their figures, and whether their outputs were equal to
    each other's and to the oracle's (None: not compared)."""

    query: str
    runs: list[RunFigures]
    providers_equal: bool | None
    oracle_equal: bool | None
    differences: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkResult:
    config: NexmarkConfig
    master: str
    outcomes: list[QueryOutcome]

    def as_dict(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "master": self.master,
                "queries": [{"query": o.query, "providers_equal": o.providers_equal,
                             "oracle_equal": o.oracle_equal, "differences": o.differences,
                             "runs": [r.as_dict() for r in o.runs]} for o in self.outcomes],
                "not_expressible": NOT_EXPRESSIBLE}

    @property
    def all_equal(self) -> bool:
        return all(o.providers_equal is not False and o.oracle_equal is not False
                   for o in self.outcomes)


def parse_queries(text: str) -> list[str]:
    """Query names of a comma-separated list (``all``: every one), checked."""
    names = list(QUERIES) if text.strip() == "all" else \
        [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name in NOT_EXPRESSIBLE:
            raise ValueError(f"{name} is not run: {NOT_EXPRESSIBLE[name]}")
        if name not in QUERIES:
            raise ValueError(f"unknown query {name}; known: {', '.join(QUERIES)} (or all)")
    return names


def run_benchmark(spark: SparkSession, queries: list[str], providers: list[str],
                  config: NexmarkConfig, plan: RunPlan, oracle: bool = True,
                  progress: Any = None, warmup_events: int = 0,
                  catalogue: Mapping[str, ProviderSpec] = PROVIDERS) -> BenchmarkResult:
    """Runs every query on every provider (names in ``catalogue``); ``progress`` (a
    callable) hears of each run. First, unless ``warmup_events`` is 0, the first query runs
    on every provider over that many events, unmeasured: the JVM's code is compiled before
    any run is timed."""
    if warmup_events:
        small = replace(config, events=warmup_events)
        warm = replace(plan, root=plan.path("warmup"), kill_after=None, stop_after=None,
                       batch_events=max(1, warmup_events // 4))
        for provider in providers:
            run_query(spark, QUERIES[queries[0]], provider, small, warm, catalogue)
    outcomes = []
    for i, name in enumerate(queries):
        query = QUERIES[name]
        if query.needs_pandas:
            _need_pandas(name)
        # Each query's providers alternate in order, so none always runs on a cold JVM.
        order = providers if i % 2 == 0 else list(reversed(providers))
        runs = {}
        for provider in order:
            runs[provider] = run_query(spark, query, provider, config, plan, catalogue)
            if progress:
                progress(runs[provider])
        outcomes.append(_compared(spark, query, providers, config, plan, oracle,
                                  [runs[p] for p in providers]))
    return BenchmarkResult(config, spark.sparkContext.master, outcomes)


def _compared(spark, query, providers, config, plan, oracle, runs) -> QueryOutcome:
    if not plan.keep_output:
        return QueryOutcome(query.name, runs, None, None)
    results = {p: compare.result(spark, query, plan.path("output", f"{query.name}-{p}"))
               for p in providers}
    differences: dict[str, dict[str, int]] = {}
    first = providers[0]
    for other in providers[1:]:
        d = compare.difference(results[first], results[other])
        differences[f"{other} vs {first}"] = {"missing": d.missing, "extra": d.extra}
    providers_equal = all(d == {"missing": 0, "extra": 0} for d in differences.values())
    oracle_equal = None
    if oracle:
        expected = compare.oracle(spark, query, config)
        oracle_equal = True
        for p in providers:
            d = compare.difference(expected, results[p])
            differences[f"{p} vs oracle"] = {"missing": d.missing, "extra": d.extra}
            oracle_equal = oracle_equal and d.equal
    return QueryOutcome(query.name, runs, providers_equal, oracle_equal, differences)


def _need_pandas(name: str) -> None:
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise ValueError(f"{name} runs its ranking in pandas (applyInPandasWithState): "
                         "pip install 'rockstate[pandas]'") from None


# ---- what it prints and writes ----

_COLUMNS = (("query", "query"), ("provider", "provider"), ("cpu_s", "Cores x Time (s)"),
            ("time_s", "time (s)"), ("cores", "cores"), ("events_per_s", "events/s"),
            ("batch_p50_ms", "batch p50 (ms)"), ("batch_p95_ms", "p95 (ms)"),
            ("state_rows_peak", "state rows"), ("state_bytes_peak", "state bytes"),
            ("checkpoint_files", "files"), ("checkpoint_bytes", "file bytes"),
            ("recovery_s", "recovery (s)"))


def table(result: BenchmarkResult) -> str:
    """The figures as a Markdown table, a row a query and provider, with each query's
    comparison and each provider's Cores x Time against the first provider's."""
    head = [title for _, title in _COLUMNS] + ["ratio", "outputs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in result.outcomes:
        base = o.runs[0].cpu_s or o.runs[0].time_s
        for r in o.runs:
            cells = [_cell(getattr(r, key)) for key, _ in _COLUMNS]
            mine = r.cpu_s or r.time_s
            cells.append(f"{mine / base:.2f}" if base else "")
            cells.append(_verdict(o) if r is o.runs[0] else "")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(result: BenchmarkResult, path: str | Path) -> None:
    Path(path).write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")


def _verdict(o: QueryOutcome) -> str:
    if o.providers_equal is None:
        return "not compared"
    words = ["equal" if o.providers_equal else "DIFFERENT"]
    if o.oracle_equal is not None:
        words.append("= oracle" if o.oracle_equal else "!= ORACLE")
    return ", ".join(words)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
