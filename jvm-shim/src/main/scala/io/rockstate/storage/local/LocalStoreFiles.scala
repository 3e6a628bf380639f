package io.rockstate.storage.local

import java.io.{File, FileInputStream}
import java.nio.charset.StandardCharsets
import java.nio.file.{FileAlreadyExistsException, Files, StandardCopyOption}
import java.security.MessageDigest
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import java.util.zip.CRC32

import scala.jdk.CollectionConverters._
import scala.util.Using
import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import org.apache.spark.SparkFiles
import org.apache.spark.internal.Logging

import io.rockstate.storage.format.{CheckpointPath, ChecksummedCopy, RemoteFile}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * An executor's local files for one store, found again by the store's checkpoint path: every
 * provider instance of that store on this executor (the restarted query's too, since Spark
 * keys providers by run id) shares them. This is rockstate's task-local recovery: `cache/`
 * holds every immutable checkpoint file (SST, snapshot meta file, changelog) this executor
 * uploaded or downloaded, under its checkpoint path, so a load downloads only what it lacks.
 * Work directories (a live DB, a local checkpoint, a changelog being written) are private to
 * one instance and carry a unique suffix. The directory is counted per instance: it is
 * deleted (local recovery off) or becomes evictable (on) only when the last one releases it.
 */
final class LocalStoreFiles private (val dir: File, base: File, maxCacheBytes: Long) {
  private val cacheDir = new File(dir, "cache")
  Files.createDirectories(cacheDir.toPath)

  /**
   * The cache's copy of checkpoint file `key` (a path, or a pack member's `RemoteFile.cacheKey`;
   * checked: it names a file in the cache).
   */
  def cached(key: String): File = CheckpointPath.localFile(cacheDir,
    CheckpointPath.relative(key, s"a file name cached in $cacheDir").replace('/', '_'),
    s"a file name cached in $cacheDir")

  /** A fresh private directory or file name under the store's local directory. */
  def newWorkPath(prefix: String): File = new File(dir, s"$prefix-${UUID.randomUUID()}")

  /**
   * Puts a local file just uploaded with `crc32` into the cache, as `key` (its path, or a pack
   * member's cache key); hard link, no copy.
   */
  def adopt(local: File, key: String, crc32: Long): Unit = {
    val target = cached(key)
    try Files.createLink(target.toPath, local.toPath) catch {
      case _: FileAlreadyExistsException => // the same immutable file, cached already
    }
    LocalStoreFiles.markVerified(target, crc32)
    LocalStoreFiles.markUsed(target)
  }

  /** Marks the cached copy of `key` as used now (a snapshot just published shares it). */
  def touch(key: String): Unit = LocalStoreFiles.markUsed(cached(key))

  /**
   * The cached copy of a checkpoint file, downloaded and checked first when absent; returns it
   * with the number of bytes downloaded (0 on a cache hit).
   */
  def fetch(remote: StoreCheckpointDir, file: RemoteFile, neededBy: String): (File, Long) = {
    val (size, crc32) = (file.size, file.crc32)
    val target = cached(file.cacheKey)
    if (isPlainFile(target) && target.length == size && LocalStoreFiles.intact(target, crc32)) {
      LocalStoreFiles.markUsed(target)
      (target, 0L)
    } else {
      val part = newWorkPath("download")
      try {
        remote.download(file, neededBy, part)
        Files.move(part.toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE)
      } finally part.delete()
      LocalStoreFiles.markVerified(target, crc32)
      LocalStoreFiles.markUsed(target)
      (target, size)
    }
  }

  /**
   * The cached copy of a file found by listing (a version file, `size` from the listing), whose
   * CRC32 no manifest recorded: downloaded when absent; returns it with its CRC32 and the bytes
   * downloaded. The caller checks it against the checksum it carries (`VersionFile.read`).
   */
  def fetchSelfChecked(remote: StoreCheckpointDir, path: String, size: Long,
      neededBy: String): (File, Long, Long) = {
    val target = cached(path)
    if (isPlainFile(target) && target.length == size) {
      LocalStoreFiles.markUsed(target)
      (target, LocalStoreFiles.crcOf(target), 0L)
    } else {
      val part = newWorkPath("download")
      val (downloaded, crc) = try {
        val got = remote.downloadSelfChecked(path, size, neededBy, part)
        Files.move(part.toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE)
        got
      } finally part.delete()
      LocalStoreFiles.markVerified(target, crc)
      LocalStoreFiles.markUsed(target)
      (target, crc, downloaded)
    }
  }

  /** A regular file, not a symlink: the cache holds only what this JVM downloaded. */
  private def isPlainFile(f: File): Boolean =
    Files.isRegularFile(f.toPath, java.nio.file.LinkOption.NOFOLLOW_LINKS)

  /**
   * Drops cached files whose checkpoint path is not in `keep`, except those this JVM used
   * since `since` (`System.nanoTime`): `keep` comes from a cleanup's listing taken then, and a
   * snapshot published after it (its files adopted or shared, a later version built on it) is
   * in no such listing. A pack member is kept while its pack is.
   */
  def prune(keep: Set[String], since: Long): Unit = {
    val names = keep.map(_.replace('/', '_'))
    Option(cacheDir.listFiles()).getOrElse(Array.empty[File]).foreach { f =>
      val pack = LocalStoreFiles.packOf(f.getName)
      if (!names.contains(f.getName) && !pack.exists(names.contains) &&
        !LocalStoreFiles.usedSince(f, since)) {
        f.delete()
        LocalStoreFiles.forget(f)
      }
    }
  }

  /**
   * This instance is done with the files. The last instance of the store deletes them when
   * local recovery is off; with it on they stay, and closed stores beyond `localCacheMaxMB`
   * are evicted, least recently released first.
   */
  def release(localRecovery: Boolean): Unit = LocalStoreFiles.synchronized {
    if (LocalStoreFiles.leave(dir) == 0) {
      if (!localRecovery) LocalStoreFiles.deleteStoreDir(dir)
      else {
        LocalStoreFiles.measure(dir.getAbsoluteFile, System.nanoTime())
        LocalStoreFiles.evictClosed(base, maxCacheBytes)
      }
    }
  }
}

object LocalStoreFiles extends Logging {
  /**
   * The local files of the store at `storePath` (its checkpoint directory's URI), under
   * `localDir`, or Spark's per-application directory when it is empty.
   */
  def forStore(storePath: String, label: String, localDir: String,
      maxCacheMB: Long = Long.MaxValue / (1 << 20)): LocalStoreFiles = synchronized {
    val digest = MessageDigest.getInstance("SHA-256")
      .digest(storePath.getBytes(StandardCharsets.UTF_8)).take(8).map("%02x".format(_)).mkString
    val base = if (localDir.nonEmpty) new File(localDir) else defaultRoot
    val dir = new File(new File(base, "stores"), s"$label-$digest")
    Files.createDirectories(dir.toPath)
    users.merge(dir.getAbsoluteFile, 1, (a: Integer, b: Integer) => Integer.valueOf(a + b))
    bases.add(base.getAbsoluteFile)
    new LocalStoreFiles(dir, base, maxCacheMB * 1024 * 1024)
  }

  /** The pack of a cached member (its flattened `RemoteFile.cacheKey`), if it is one. */
  private def packOf(name: String): Option[String] = {
    val at = name.lastIndexOf(RemoteFile.MemberMark)
    val offset = name.substring(at + 1)
    if (at > 0 && offset.nonEmpty && offset.forall(_.isDigit) && name.substring(0, at)
      .endsWith(SstPacks.Suffix)) Some(name.substring(0, at)) else None
  }

  // Local roots stores of this JVM use (for the cache-size metric).
  private val bases = ConcurrentHashMap.newKeySet[File]()
  // The last cache size measured, and when: walking the cache is not free, and Spark's metrics
  // sinks may ask every second.
  private val measured = new java.util.concurrent.atomic.AtomicReference[(Long, Long)]((0L, 0L))

  /**
   * Bytes of local store files in this JVM (open and cached stores), at most 5 s old. Each
   * store directory counts as eviction knows it (`bytesOf`): a closed store's size from its
   * release, so thousands of closed stores cost a listing, not a walk of their files.
   */
  def cacheBytes: Long = {
    val (at, bytes) = measured.get
    val now = System.nanoTime()
    if (at != 0L && now - at < 5000000000L) bytes
    else {
      val total = bases.asScala.toSeq.map(b => cacheBytesUnder(b, now)).sum
      measured.set((now, total))
      total
    }
  }

  /** The store files under one local root at `now`, as `cacheBytes` counts them. */
  private[rockstate] def cacheBytesUnder(base: File, now: Long): Long =
    storeDirs(base).map(d => bytesOf(d, now)).sum

  /** The store directories under a local root (every entry is one `forStore` made), absolute. */
  private def storeDirs(base: File): Seq[File] =
    Option(new File(base, "stores").listFiles()).getOrElse(Array.empty[File])
      .map(_.getAbsoluteFile).toSeq

  /** Store instances open in this JVM. */
  def openStores: Int = users.values().asScala.map(_.intValue).sum

  // Open instances per store directory, in this JVM.
  private val users = new ConcurrentHashMap[File, Integer]()
  // Cached files whose CRC32 this JVM checked, with the size and mtime it checked them at.
  private val verified = new ConcurrentHashMap[String, (Long, Long, Long)]()
  // When this JVM last put each cached file in the cache or found it there (System.nanoTime).
  private val lastUsed = new ConcurrentHashMap[String, java.lang.Long]()

  /** One instance fewer; returns how many are left. Under the object's lock. */
  private def leave(dir: File): Int = {
    val left = Option(users.computeIfPresent(dir.getAbsoluteFile, (_, n) =>
      if (n <= 1) null else Integer.valueOf(n - 1))).map(_.intValue).getOrElse(0)
    // The released directory's mtime orders eviction (least recently released first).
    if (left == 0) dir.setLastModified(System.currentTimeMillis())
    left
  }

  // Each store directory's bytes as last walked (System.nanoTime, bytes). A closed store's files
  // do not change: it is walked once, when its last instance releases it. An open store's is
  // walked again once 5 s old. A release then costs a listing, not a walk of every store's
  // files (with thousands of stores and unloadOnCommit, a release every task).
  private val dirBytes = new ConcurrentHashMap[File, (Long, Long)]()
  private val OpenSizeMaxAgeNanos = 5000000000L
  // Directory walks for sizes, in this JVM (what the eviction costs; tests read it).
  private[rockstate] val directoryWalks = new java.util.concurrent.atomic.AtomicLong()
  // Files those walks sized, in this JVM (tests read it).
  private[rockstate] val filesSized = new java.util.concurrent.atomic.AtomicLong()

  /** Walks `dir` (an absolute store directory) for its size now, and remembers it. */
  private def measure(dir: File, now: Long): Long = {
    val bytes = sizeOf(dir)
    directoryWalks.incrementAndGet()
    dirBytes.put(dir, (now, bytes))
    bytes
  }

  /** `dir`'s bytes: as remembered, unless it is open and that is older than 5 s. */
  private def bytesOf(dir: File, now: Long): Long = Option(dirBytes.get(dir)) match {
    case Some((at, bytes)) if !users.containsKey(dir) || now - at < OpenSizeMaxAgeNanos => bytes
    case _ => measure(dir, now)
  }

  /**
   * Deletes closed store directories under `base`, oldest first, until within `maxBytes`.
   * Best effort: open stores' RocksDB files come and go while they are sized, and a failure
   * here must never fail the close that called it.
   */
  private def evictClosed(base: File, maxBytes: Long): Unit = try {
    val now = System.nanoTime()
    // Listed, not stat-ed one by one.
    val dirs = storeDirs(base)
    val sizes = dirs.map(d => d -> bytesOf(d, now)).toMap
    var total = sizes.values.sum
    if (total > maxBytes) { // only then are the closed ones ordered (a stat each)
      dirs.filterNot(users.containsKey).sortBy(_.lastModified).foreach { d =>
        if (total > maxBytes) {
          deleteStoreDir(d)
          total -= sizes(d)
        }
      }
    }
  } catch {
    case NonFatal(e) => logWarning(s"rockstate: evicting closed stores under $base failed", e)
  }

  /** Bytes under `dir`, counting files that vanish during the walk as nothing. */
  private def sizeOf(dir: File): Long = {
    val files = try Files.walk(dir.toPath) catch { case NonFatal(_) => return 0L }
    try {
      files.iterator().asScala.map { p =>
        try if (Files.isRegularFile(p)) { filesSized.incrementAndGet(); Files.size(p) } else 0L
        catch { case NonFatal(_) => 0L }
      }.sum
    } catch {
      case NonFatal(_) => 0L // a directory vanished mid-walk: size it next time
    } finally files.close()
  }

  private def markVerified(file: File, crc32: Long): Unit =
    verified.put(file.getAbsolutePath, (file.length, file.lastModified, crc32))

  private def markUsed(file: File): Unit = lastUsed.put(file.getAbsolutePath, System.nanoTime())

  private def usedSince(file: File, since: Long): Boolean =
    Option(lastUsed.get(file.getAbsolutePath)).exists(t => t - since >= 0)

  private def forget(file: File): Unit = {
    verified.remove(file.getAbsolutePath)
    lastUsed.remove(file.getAbsolutePath)
  }

  /** Deletes a store's local directory, and what this JVM remembers of its cached files. */
  private def deleteStoreDir(dir: File): Unit = {
    FileUtils.deleteQuietly(dir)
    dirBytes.remove(dir.getAbsoluteFile)
    val prefix = dir.getAbsolutePath + File.separator
    verified.keySet.removeIf(_.startsWith(prefix))
    lastUsed.keySet.removeIf(_.startsWith(prefix))
  }

  /**
   * Whether a cached file has the expected CRC32: checked once per file and JVM (the cache
   * holds immutable checkpoint files), again if its size or mtime changed.
   */
  private def intact(file: File, crc32: Long): Boolean = {
    val seen = verified.get(file.getAbsolutePath)
    if (seen != null && seen == ((file.length, file.lastModified, crc32))) true
    else {
      val ok = computeCrc(file) == crc32
      if (ok) markVerified(file, crc32) else file.delete()
      ok
    }
  }

  /** A cached file's CRC32: the one this JVM computed, unless the file changed since. */
  private def crcOf(file: File): Long = {
    val seen = verified.get(file.getAbsolutePath)
    if (seen != null && seen._1 == file.length && seen._2 == file.lastModified) seen._3
    else computeCrc(file)
  }

  private def computeCrc(file: File): Long = {
    val crc = new CRC32()
    Using.resource(new FileInputStream(file)) { in =>
      ChecksummedCopy.copy(in, java.io.OutputStream.nullOutputStream(), crc)
    }
    crc.getValue
  }

  /** Executor-local scratch space: Spark's per-application files dir, else java.io.tmpdir. */
  private def defaultRoot: File = {
    val base = try new File(SparkFiles.getRootDirectory()) catch {
      case NonFatal(_) => new File(System.getProperty("java.io.tmpdir"))
    }
    new File(base, "rockstate")
  }
}
