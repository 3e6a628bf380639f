"""A checkpoint location's files, read with no Spark: the location (read-only, or opened for
writing), rockstate's format, Spark's own files (offsets, operator metadata, state schemas, its
RocksDB provider's checkpoints) and the checkpoint model."""
