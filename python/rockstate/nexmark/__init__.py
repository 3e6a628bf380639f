"""Nexmark, the stateful streaming benchmark, on Spark Structured Streaming: its generator, its
stateful queries and a runner that compares state providers on them (``rockstate nexmark``).
See docs/nexmark.md."""
