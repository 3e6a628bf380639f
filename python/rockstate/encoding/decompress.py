"""Bounded decompression of checkpoint files (docs/guarantees.md, "Trust model").

A zstd frame of a few KB can expand to GBs; a reader of untrusted files must not. A file may
expand to at most ``limit_for(its size)``: ``max(MIN_LIMIT_BYTES, MAX_RATIO x its compressed
size)``, and never past ``MAX_BYTES``. rockstate's writer stores a changelog uncompressed
rather than past that bound, so no file it writes is refused. The output is checked as it
streams, a chunk at a time, so a refused file is refused before more than the bound (plus a
chunk) is decompressed, and a reader that streams (``changelog_records``) holds one chunk.
The JVM holds the same ratio (``DecompressionBound``); ``tests/fixtures/untrusted/rules.json``
pins both.
"""

from __future__ import annotations

from collections.abc import Iterator

from rockstate.errors import CorruptCheckpointError

MAX_RATIO = 4096
MIN_LIMIT_BYTES = 64 << 20
# What one file may expand to at most, whatever its size: the most a Python reader holds.
MAX_BYTES = 1 << 30
# Bytes decompressed at a time: a read asks for its whole size up front, and the bound of a
# 12 MB changelog is 50 GB (a 64M-key load's changelog failed with MemoryError).
CHUNK_BYTES = 16 << 20


def limit_for(compressed: int) -> int:
    """The most bytes ``compressed`` bytes of a checkpoint file may expand to."""
    return min(MAX_BYTES, max(MIN_LIMIT_BYTES, MAX_RATIO * compressed))


def zstd_chunks(data: bytes | memoryview, where: str, file_size: int | None = None
                ) -> Iterator[bytes]:
    """``data`` (one or more zstd frames) decompressed, ``CHUNK_BYTES`` at a time, at most
    ``limit_for(file_size)`` bytes in all (``file_size``: the whole file's or part's length,
    header included, as the JVM counts it; by default ``len(data)``); CorruptCheckpointError
    naming ``where`` for damage or a larger expansion, raised by the chunk that passes it."""
    import pyarrow as pa

    limit = limit_for(len(data) if file_size is None else file_size)
    total = 0
    try:
        with pa.CompressedInputStream(pa.BufferReader(data), "zstd") as stream:
            while piece := stream.read(min(CHUNK_BYTES, limit + 1 - total)):
                total += len(piece)
                if total > limit:
                    raise CorruptCheckpointError(
                        f"{where} expands past {limit} bytes from {len(data)} compressed bytes, "
                        "more than a checkpoint file may (a decompression bomb, or damage); "
                        "restore it from a trusted copy.")
                yield piece
    except (OSError, pa.ArrowException) as e:
        raise CorruptCheckpointError(f"{where} is damaged (zstd: {e}).") from None


def zstd(data: bytes | memoryview, where: str, file_size: int | None = None) -> bytes:
    """``data`` decompressed whole, as ``zstd_chunks`` bounds it (for small parts, such as a
    meta pack: a reader of a large one streams)."""
    pieces = list(zstd_chunks(data, where, file_size))
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)
