package io.rockstate.storage.format

import java.io.{FilterInputStream, InputStream}

/**
 * How far a compressed part of a checkpoint (a changelog's body, a meta pack) may expand:
 * max(`MinLimitBytes`, `MaxRatio` × its compressed bytes). A few KB of zstd frame can name
 * gigabytes of zeros (a "zip bomb"); real data never comes near the ratio (zstd reaches ~30:1
 * on state rows). tests/fixtures/untrusted/rules.json holds the same two numbers for Python.
 * Writers stay under it too (`Changelog.Writer` falls back to no compression).
 */
object DecompressionBound {
  val MinLimitBytes: Long = 64L << 20
  val MaxRatio: Long = 4096

  /**
   * The most a compressed part may expand to for the Python tools, which hold what they
   * decompress (this reader streams it, so it keeps reading earlier files past it): writers
   * store a larger body uncompressed.
   */
  val MaxHeldBytes: Long = 1L << 30

  /** The most bytes `compressedBytes` of a checkpoint may decompress to. */
  def limitFor(compressedBytes: Long): Long =
    math.max(MinLimitBytes, if (compressedBytes >= Long.MaxValue / MaxRatio) Long.MaxValue
      else MaxRatio * math.max(0L, compressedBytes))

  /**
   * The decompressed stream `in`, counted: reading past the bound fails with
   * `CorruptCheckpointException` naming `where`. `remaining` lets a decoder check a record's
   * length before it allocates it.
   */
  final class Counted(in: InputStream, compressedBytes: Long, where: => String)
      extends FilterInputStream(in) {
    val limit: Long = limitFor(compressedBytes)
    private var consumed = 0L

    /** Bytes still allowed. */
    def remaining: Long = limit - consumed

    /** Fails unless `n` more bytes fit in the bound (before allocating them). */
    def require(n: Long): Unit = if (n > remaining) throw exceeded()

    override def read(): Int = {
      val b = super.read()
      if (b >= 0) count(1)
      b
    }

    override def read(b: Array[Byte], off: Int, len: Int): Int = {
      val n = super.read(b, off, len)
      if (n > 0) count(n)
      n
    }

    override def skip(n: Long): Long = {
      val s = super.skip(n)
      if (s > 0) count(s)
      s
    }

    private def count(n: Long): Unit = {
      consumed += n
      if (consumed > limit) throw exceeded()
    }

    private def exceeded() = new CorruptCheckpointException(
      s"rockstate: $where expands past $limit bytes from $compressedBytes compressed bytes " +
        s"(at most ${MaxRatio}x, or ${MinLimitBytes >> 20} MiB); it is damaged or hostile (a " +
        "zip bomb) and is not read. The checkpoint was altered or comes from an untrusted " +
        "source; restore it from a trusted copy.")
  }
}
