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
# Bytes decompressed at a time: a read asks for its whole size up front, and the bound of a
# 12 MB changelog is 50 GB (a 64M-key load's changelog failed with MemoryError, stop 57).
_CHUNK_BYTES = 16 << 20


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
    pieces: list[bytes] = []
    total = 0
    try:
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            while total <= limit and (piece := stream.read(min(_CHUNK_BYTES, limit + 1 - total))):
                pieces.append(piece)
                total += len(piece)
    except (OSError, pa.ArrowException) as e:
        raise CorruptCheckpointError(f"{where} is damaged (zstd: {e}).") from None
    if total > limit:
        raise CorruptCheckpointError(
            f"{where} expands past {limit} bytes from {len(data)} compressed bytes, more than a "
            "checkpoint file may (a decompression bomb, or damage); restore it from a trusted "
            "copy.")
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)
