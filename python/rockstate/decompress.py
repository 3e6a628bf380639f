"""Bounded decompression of checkpoint files (docs/guarantees.md, "Trust model").

A zstd frame of a few KB can expand to GBs; a reader of untrusted files must not. A file may
expand to at most ``max(MIN_LIMIT_BYTES, MAX_RATIO x its compressed size)``; rockstate's writer
stores a changelog uncompressed rather than past that ratio, so no file it wrote is refused.
The JVM holds the same bound (``DecompressionBound``); ``tests/fixtures/untrusted/rules.json``
pins both.
"""

from __future__ import annotations

from rockstate.errors import CorruptCheckpointError

MAX_RATIO = 4096
MIN_LIMIT_BYTES = 64 << 20


def limit_for(compressed: int) -> int:
    """The most bytes ``compressed`` bytes of a checkpoint file may expand to."""
    return max(MIN_LIMIT_BYTES, MAX_RATIO * compressed)


def zstd(data: bytes | memoryview, where: str, file_size: int | None = None) -> bytes:
    """``data`` (one or more zstd frames) decompressed, at most ``limit_for(file_size)`` bytes
    (``file_size``: the whole file's or part's length, header included, as the JVM counts it;
    by default ``len(data)``); CorruptCheckpointError naming ``where`` for damage or a larger
    expansion."""
    import pyarrow as pa

    limit = limit_for(len(data) if file_size is None else file_size)
    try:
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            out = stream.read(limit + 1)
    except (OSError, pa.ArrowException) as e:
        raise CorruptCheckpointError(f"{where} is damaged (zstd: {e}).") from None
    if len(out) > limit:
        raise CorruptCheckpointError(
            f"{where} expands past {limit} bytes from {len(data)} compressed bytes, more than a "
            "checkpoint file may (a decompression bomb, or damage); restore it from a trusted "
            "copy.")
    return bytes(out)
