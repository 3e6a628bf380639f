"""Encodings of state entries and rows, decoded into Arrow: Spark's UnsafeRow and Avro rows,
rockstate's packed entries and row checksums, changelog overlays, compressed files."""
