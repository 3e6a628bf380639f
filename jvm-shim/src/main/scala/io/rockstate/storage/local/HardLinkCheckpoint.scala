package io.rockstate.storage.local

import java.io.File
import java.nio.channels.FileChannel
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, StandardCopyOption, StandardOpenOption}

import scala.jdk.CollectionConverters._
import scala.util.Using

import org.apache.commons.io.FileUtils
import org.rocksdb.RocksDB

/**
 * A consistent copy of a flushed RocksDB with its WAL off, made without RocksDB's `Checkpoint`:
 * in rocksdbjni 9.8.4 (Spark 4.3's) `Checkpoint` goes through `GetSortedWalFiles`, which waits
 * for obsolete-file purges to end and can miss the signal that they did (RocksDB PR 14069), so
 * a snapshot could wait forever. With no WAL and the memtables flushed, the database is its
 * live SSTs (hard-linked), its MANIFEST up to the size RocksDB gives, CURRENT naming that
 * MANIFEST, and its OPTIONS file; file deletions stay off while they are linked and copied.
 */
object HardLinkCheckpoint {

  /** Writes the copy of `db` (in `dbDir`) to `target`, which must not exist yet. */
  def write(db: RocksDB, dbDir: File, target: File): Unit = {
    require(!target.exists(), s"$target exists already")
    val staging = new File(target.getParentFile, target.getName + ".partial")
    FileUtils.deleteQuietly(staging)
    Files.createDirectories(staging.toPath)
    try {
      db.disableFileDeletions()
      try copyLiveFiles(db, dbDir, staging) finally db.enableFileDeletions()
      Files.move(staging.toPath, target.toPath, StandardCopyOption.ATOMIC_MOVE)
    } catch {
      case e: Throwable =>
        FileUtils.deleteQuietly(staging)
        throw e
    }
  }

  private def copyLiveFiles(db: RocksDB, dbDir: File, staging: File): Unit = {
    val live = db.getLiveFiles(false) // flushed by the caller
    val names = live.files.asScala.map(_.stripPrefix("/")).toSeq
    val manifest = names.find(_.startsWith("MANIFEST-")).getOrElse(
      throw new IllegalStateException(s"RocksDB in $dbDir named no MANIFEST among $names"))
    names.foreach { name =>
      val source = new File(dbDir, name).toPath
      val copy = staging.toPath.resolve(name)
      if (name.endsWith(".sst")) Files.createLink(copy, source)
      else if (name == manifest) copyPrefix(source, copy, live.manifestFileSize)
      else if (name != "CURRENT") Files.copy(source, copy)
    }
    // CURRENT may already name a newer MANIFEST than the one the files were read with.
    Files.write(staging.toPath.resolve("CURRENT"),
      (manifest + "\n").getBytes(StandardCharsets.US_ASCII))
  }

  private def copyPrefix(source: java.nio.file.Path, copy: java.nio.file.Path,
      bytes: Long): Unit =
    Using.resources(FileChannel.open(source, StandardOpenOption.READ),
        FileChannel.open(copy, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      (in, out) =>
        @annotation.tailrec
        def transfer(done: Long): Unit = if (done < bytes) {
          val moved = in.transferTo(done, bytes - done, out)
          if (moved <= 0) {
            throw new IllegalStateException(s"$source ended at $done of $bytes bytes")
          }
          transfer(done + moved)
        }
        transfer(0L)
    }
}
