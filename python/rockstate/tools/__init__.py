"""The offline tools over a checkpoint location: read and export state, its change feed,
verify, report, savepoints, and the rewrites (rescale, migrate)."""
