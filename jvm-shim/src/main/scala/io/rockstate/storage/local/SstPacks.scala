package io.rockstate.storage.local

import java.io.File

/**
 * Which of a snapshot's new SSTs travel together as one object (Flink's file merging,
 * FLIP-306): on an object store every file is a PUT, a GET on load and a listed entry, and a
 * snapshot of a busy store uploads a handful of small SSTs (flushes, L0 compactions) next to
 * the few large ones. SSTs of at most `maxBytes` are concatenated, in name order, into packs of
 * at most `maxBytes` each; a larger SST is uploaded on its own, as is every SST when packing is
 * off (`maxBytes` 0). A pack is immutable and lives as long as a manifest names a member of it.
 */
object SstPacks {
  val Suffix = ".pack"

  /** The packs of `files` (each non-empty, in order) and the files uploaded alone. */
  def plan(files: Seq[File], maxBytes: Long): (Seq[Seq[File]], Seq[File]) = {
    // Each file's length read once (a stat each).
    val sized = files.map(f => (f, f.length))
    val (small, alone) = sized.partition { case (_, n) => maxBytes > 0 && n <= maxBytes }
    // (packs closed, the open pack, its bytes)
    val (closed, open, _) = small.foldLeft((Vector.empty[Vector[File]], Vector.empty[File], 0L)) {
      case ((done, current, bytes), (f, n)) =>
        if (current.nonEmpty && bytes + n > maxBytes) (done :+ current, Vector(f), n)
        else (done, current :+ f, bytes + n)
    }
    (if (open.isEmpty) closed else closed :+ open, alone.map(_._1))
  }

  /** A new pack's path in the store: the snapshot's version and a unique id. */
  def pathFor(version: Long): String = s"sst/$version-${java.util.UUID.randomUUID()}$Suffix"
}
