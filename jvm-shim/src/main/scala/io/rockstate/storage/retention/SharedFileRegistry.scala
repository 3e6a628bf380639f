package io.rockstate.storage.retention

import scala.collection.mutable

/**
 * Flink's SharedStateRegistry for one store: which manifests (owners) reference which
 * checkpoint files, counted. A version manifest references its changelogs and its snapshot's
 * manifest; a snapshot manifest references its SST and meta files. A file may be deleted only
 * once its count is zero, and the count drops only after the owner manifest was deleted, so a
 * crash in between leaves an orphan for the sweep, never a retained version without its file.
 *
 * It is rebuilt from the manifests present in the checkpoint location (each read once per
 * provider instance), so it holds no state a crash could lose. Not thread-safe: the cleaner
 * that owns it runs in one maintenance thread at a time.
 */
final class SharedFileRegistry {
  private val owners = mutable.Map.empty[String, Seq[String]]
  private val counts = mutable.Map.empty[String, Int]

  def isRegistered(owner: String): Boolean = owners.contains(owner)

  def registeredOwners: Set[String] = owners.keySet.toSet

  def register(owner: String, references: Seq[String]): Unit = {
    require(!owners.contains(owner), s"rockstate: $owner is registered already")
    val refs = references.distinct
    owners(owner) = refs
    refs.foreach(r => counts(r) = counts.getOrElse(r, 0) + 1)
  }

  /** Forgets an owner; returns the files nothing references any more. */
  def unregister(owner: String): Seq[String] = owners.remove(owner) match {
    case None => Nil
    case Some(refs) => refs.filter { r =>
      val n = counts(r) - 1
      if (n == 0) counts.remove(r) else counts(r) = n
      n == 0
    }
  }

  def count(path: String): Int = counts.getOrElse(path, 0)

  /** Every file some registered owner references. */
  def referenced: Set[String] = counts.keySet.toSet
}
