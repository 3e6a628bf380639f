"""``rockstate nexmark``: the chosen queries on the chosen providers over the same events, with
each query's outputs compared (providers against each other and against the oracle) and a
table, JSON and a page of the figures.

Each run has a JVM of its own by default (``run_isolated``): a run in a shared JVM pays or
inherits what the runs before it left (compiled code, heap, threads), which biased the
comparison by about a fifth in favour of whichever provider ran second. Providers alternate
over the repeats (A B, B A, ...), and the figures are each provider's medians with the
spread of its runs."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rockstate.nexmark import compare
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.isolated import IsolatedRun, run_isolated
from rockstate.nexmark.queries import NOT_EXPRESSIBLE, QUERIES
from rockstate.nexmark.run import RunFigures, RunPlan, run_name, run_query
from rockstate.nexmark.threads import ORDER
from rockstate.session.providers import PROVIDERS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyspark.sql import SparkSession

    from rockstate.session.providers import ProviderSpec


@dataclass(frozen=True)
class QueryOutcome:
    """One query on every provider: the figures of every run (``repeat`` numbers a
    provider's runs), and whether the outputs of the first runs were equal to each other's
    and to the oracle's (None: not compared)."""

    query: str
    runs: list[RunFigures]
    providers_equal: bool | None
    oracle_equal: bool | None
    differences: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def providers(self) -> list[str]:
        return list(dict.fromkeys(r.provider for r in self.runs))

    def runs_of(self, provider: str) -> list[RunFigures]:
        return [r for r in self.runs if r.provider == provider]

    def median(self, provider: str) -> RunFigures:
        """The provider's runs as one: each figure's median over them."""
        return median_run(self.runs_of(provider))

    def spread(self, provider: str, key: str) -> tuple[float, float] | None:
        """The least and the most of figure ``key`` over the provider's runs."""
        values = [getattr(r, key) for r in self.runs_of(provider)]
        if any(v is None for v in values) or not values:
            return None
        return min(values), max(values)


@dataclass(frozen=True)
class BenchmarkResult:
    config: NexmarkConfig
    master: str
    outcomes: list[QueryOutcome]
    repeats: int = 1
    isolated: bool = False  # each run in a JVM of its own

    def as_dict(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "master": self.master,
                "repeats": self.repeats, "isolated": self.isolated,
                "queries": [{"query": o.query, "providers_equal": o.providers_equal,
                             "oracle_equal": o.oracle_equal, "differences": o.differences,
                             "medians": [o.median(p).as_dict() for p in o.providers],
                             "spread": {p: {k: o.spread(p, k) for k in ("cpu_s", "time_s")}
                                        for p in o.providers},
                             "runs": [r.as_dict() for r in o.runs]} for o in self.outcomes],
                "not_expressible": NOT_EXPRESSIBLE}

    @property
    def all_equal(self) -> bool:
        return all(o.providers_equal is not False and o.oracle_equal is not False
                   for o in self.outcomes)


def median_run(runs: list[RunFigures]) -> RunFigures:
    """One run whose every number is the median of ``runs``' (a group's CPU seconds too)."""
    first = runs[0]
    if len(runs) == 1:
        return first
    values: dict[str, Any] = {}
    for f in fields(RunFigures):
        column = [getattr(r, f.name) for r in runs]
        if f.name == "driver_pid":
            values[f.name] = None  # a median of several runs ran in no one process
        elif f.name == "repeat":
            values[f.name] = first.repeat
        elif f.name == "cpu_by_thread_group":
            values[f.name] = None if any(c is None for c in column) else {
                g: round(statistics.median(c.get(g, 0.0) for c in column), 2)
                for g in ORDER if any(g in c for c in column)}
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column):
            m = statistics.median(column)
            values[f.name] = type(column[0])(m) if isinstance(column[0], int) else round(m, 3)
        else:
            values[f.name] = getattr(first, f.name)
    return RunFigures(**values)


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
                  catalogue: Mapping[str, ProviderSpec] = PROVIDERS,
                  repeats: int = 1) -> BenchmarkResult:
    """Runs every query on every provider (names in ``catalogue``) in ``spark``'s own
    application: what a test of the queries' outputs needs, not a fair comparison
    (``run_isolated_benchmark``). ``progress`` (a callable) hears of each run. Unless
    ``warmup_events`` is 0, each query first runs on every provider over that many events,
    unmeasured."""

    def warm(name: str) -> None:
        small = replace(config, events=warmup_events)
        w = replace(plan, root=plan.path("warmup"), kill_after=None, stop_after=None,
                    batch_events=max(1, warmup_events // 4))
        for provider in providers:
            run_query(spark, QUERIES[name], provider, small, w, catalogue)

    def run_one(name: str, provider: str, repeat: int) -> RunFigures:
        return run_query(spark, QUERIES[name], provider, config, plan, catalogue, repeat)

    runs = _interleaved(queries, providers, repeats, run_one, progress,
                        warm if warmup_events else None)
    outcomes = [_compared(spark, QUERIES[q], providers, config, plan, oracle, runs[q])
                for q in queries]
    return BenchmarkResult(config, spark.sparkContext.master, outcomes, repeats)


def run_isolated_benchmark(queries: list[str], providers: list[str], config: NexmarkConfig,
                           plan: RunPlan, master: str, confs: Mapping[str, str],
                           session: Callable[[], SparkSession], oracle: bool = True,
                           progress: Any = None, warmup_events: int = 0,
                           catalogue: Mapping[str, ProviderSpec] = PROVIDERS,
                           repeats: int = 2) -> BenchmarkResult:
    """Runs every query on every provider ``repeats`` times, each run in a Spark application
    of its own on ``master`` with ``confs`` (``rockstate.nexmark.isolated``), after an
    unmeasured run of the same query on the same provider over ``warmup_events`` events.
    ``session`` gives the application that compares the outputs, asked for only if they are
    kept."""

    def run_one(name: str, provider: str, repeat: int) -> RunFigures:
        provider_class, provider_confs = catalogue[provider]
        return run_isolated(IsolatedRun(name, provider, provider_class, dict(provider_confs),
                                        config, plan, master, dict(confs), warmup_events,
                                        repeat))

    runs = _interleaved(queries, providers, repeats, run_one, progress, None)
    spark = session() if plan.keep_output else None
    outcomes = [_compared(spark, QUERIES[q], providers, config, plan, oracle, runs[q])
                for q in queries]
    return BenchmarkResult(config, master, outcomes, repeats, isolated=True)


def _interleaved(queries: list[str], providers: list[str], repeats: int,
                 run_one: Callable[[str, str, int], RunFigures], progress: Any,
                 warm: Callable[[str], None] | None) -> dict[str, list[RunFigures]]:
    """Each query's runs, providers alternating: A B, then B A, then A B (and the first
    order alternating by query), so no provider always runs first. By provider, then
    repeat."""
    out: dict[str, list[RunFigures]] = {}
    for i, name in enumerate(queries):
        if QUERIES[name].needs_pandas:
            _need_pandas(name)
        if warm:
            warm(name)
        runs = []
        for repeat in range(repeats):
            order = providers if (i + repeat) % 2 == 0 else list(reversed(providers))
            for provider in order:
                runs.append(run_one(name, provider, repeat))
                if progress:
                    progress(runs[-1])
        out[name] = sorted(runs, key=lambda r: (providers.index(r.provider), r.repeat))
    return out


def _compared(spark, query, providers, config, plan, oracle, runs) -> QueryOutcome:
    if not plan.keep_output or spark is None:
        return QueryOutcome(query.name, runs, None, None)
    # The first run of each provider: every run has the same input, and its own output.
    results = {p: compare.result(spark, query, plan.path("output", run_name(query.name, p)))
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
    """The figures as a Markdown table, a row a query and provider (the medians of its runs,
    with the least and most Cores x Time of them), with each query's comparison and each
    provider's Cores x Time against the first provider's."""
    head = [title for _, title in _COLUMNS] + ["runs' Cores x Time", "ratio", "outputs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in result.outcomes:
        first = o.median(o.providers[0])
        base = first.cpu_s or first.time_s
        for p in o.providers:
            r = o.median(p)
            cells = [_cell(getattr(r, key)) for key, _ in _COLUMNS]
            cells.append(", ".join(_cell(x.cpu_s) for x in o.runs_of(p)))
            mine = r.cpu_s or r.time_s
            cells.append(f"{mine / base:.2f}" if base else "")
            cells.append(_verdict(o) if p == o.providers[0] else "")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def thread_table(result: BenchmarkResult) -> str:
    """Where the CPU went: each query and provider's median CPU seconds by thread group
    (rockstate.nexmark.threads), as a Markdown table."""
    medians = [(o.query, p, o.median(p).cpu_by_thread_group or {})
               for o in result.outcomes for p in o.providers]
    groups = [g for g in ORDER if any(g in m for _, _, m in medians)]
    lines = ["| " + " | ".join(["query", "provider", *groups]) + " |",
             "|" + "---|" * (2 + len(groups))]
    for query, provider, m in medians:
        lines.append("| " + " | ".join([query, provider, *(_cell(m.get(g)) for g in groups)])
                     + " |")
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
