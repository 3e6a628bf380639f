package io.rockstate.storage

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
    val (small, alone) = files.partition(f => maxBytes > 0 && f.length <= maxBytes)
    val packs = small.foldLeft(Vector.empty[Vector[File]]) { (done, f) =>
      done.lastOption match {
        case Some(open) if open.map(_.length).sum + f.length <= maxBytes =>
          done.init :+ (open :+ f)
        case _ => done :+ Vector(f)
      }
    }
    (packs, alone)
  }

  /** A new pack's path in the store: the snapshot's version and a unique id. */
  def pathFor(version: Long): String = s"sst/$version-${java.util.UUID.randomUUID()}$Suffix"
}
