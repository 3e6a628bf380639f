package io.rockstate.storage.snapshot

import java.util.concurrent.ConcurrentHashMap

import io.rockstate.storage.format.StateFile

/**
 * SST files a snapshot may reference instead of uploading, by local file name: the files of
 * the snapshot a DB instance was opened from and of the snapshots it produced whose manifests
 * are written (Flink's FLINK-25395 lesson: reuse only what is confirmed). Each remembers its
 * owner, the newest confirmed snapshot manifest naming it: a file is only as safe as a
 * manifest that keeps it alive. Scoped to one DB instance, because another instance reopened
 * from an older snapshot reuses file numbers.
 */
final class ConfirmedFiles(initial: Iterable[StateFile], initialOwner: String) {
  private val files = new ConcurrentHashMap[String, (StateFile, String)]()
  initial.foreach(f => files.put(f.localName, (f, initialOwner)))

  /** The confirmed file of that name and size, with its owner. */
  def reusable(localName: String, size: Long): Option[(StateFile, String)] =
    Option(files.get(localName)).filter(_._1.size == size)

  /** The files of a snapshot whose manifest `owner` is written: it owns them from now on. */
  def confirm(snapshot: Iterable[StateFile], owner: String): Unit =
    snapshot.foreach(f => files.put(f.localName, (f, owner)))

  /** Forgets every file owned by a manifest that is gone: they are uploaded again. */
  def forgetOwner(owner: String): Unit = files.values().removeIf(_._2 == owner)
}
