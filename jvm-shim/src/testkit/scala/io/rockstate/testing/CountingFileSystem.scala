package io.rockstate.testing

import java.net.URI
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FileStatus, FSDataInputStream, FSDataOutputStream, LocatedFileStatus, Path, RawLocalFileSystem, RemoteIterator}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

/**
 * A Hadoop FileSystem over the local disk, scheme `rscount`, that counts the calls made to it
 * by kind, as an object store would bill them: `status` (HEAD: getFileStatus, exists), `list`
 * (a listing: listStatus, globStatus, or one recursive listFiles, which an object store serves
 * as one flat listing), `open` (GET), `create` (PUT), `rename`, `delete`. Set
 * `fs.rscount.impl` to this class; `CountingFileSystem.counts` reads the totals.
 * `fs.rscount.latencyMs` makes each counted call take that long.
 */
class CountingFileSystem extends RawLocalFileSystem {
  import CountingFileSystem._

  // A recursive listing is one call however many directories the local walk lists.
  private val nested = new ThreadLocal[Boolean] { override def initialValue(): Boolean = false }
  // `fs.rscount.latencyMs`: each counted call waits this long, as a request to an object
  // store would (benchmarks of request-bound code).
  private var latencyMs = 0L

  override def initialize(uri: URI, conf: org.apache.hadoop.conf.Configuration): Unit = {
    super.initialize(uri, conf)
    latencyMs = conf.getLong("fs.rscount.latencyMs", 0L)
  }

  private def count(kind: String): Unit = {
    CountingFileSystem.count(kind)
    if (latencyMs > 0) Thread.sleep(latencyMs)
  }

  override def getScheme: String = Scheme
  override def getUri: URI = URI.create(s"$Scheme:///")

  override def pathToFile(path: Path): java.io.File = {
    val p = if (path.isAbsolute) path else new Path(getWorkingDirectory, path)
    new java.io.File(p.toUri.getPath)
  }

  override def getFileStatus(f: Path): FileStatus = {
    if (!nested.get) count("status")
    super.getFileStatus(f)
  }

  override def listStatus(f: Path): Array[FileStatus] = {
    if (!nested.get) count("list")
    super.listStatus(f)
  }

  override def globStatus(pattern: Path): Array[FileStatus] = {
    count("list")
    inside(super.globStatus(pattern))
  }

  override def listFiles(f: Path, recursive: Boolean): RemoteIterator[LocatedFileStatus] = {
    count("list")
    // Walked here by listStatus (Hadoop's own walk needs a file: URI), uncounted inside.
    def walk(dir: Path): List[LocatedFileStatus] = super.listStatus(dir).toList.flatMap { st =>
      if (st.isDirectory) { if (recursive) walk(st.getPath) else Nil }
      // Built field by field: copying `st` would load its permissions through a file: URI.
      else List(new LocatedFileStatus(st.getLen, false, st.getReplication.toInt, st.getBlockSize,
        st.getModificationTime, st.getAccessTime, null, null, null, null, st.getPath, null))
    }
    val all = inside {
      if (!super.exists(f)) throw new java.io.FileNotFoundException(f.toString)
      walk(f)
    }
    new RemoteIterator[LocatedFileStatus] {
      private var left = all
      override def hasNext: Boolean = left.nonEmpty
      override def next(): LocatedFileStatus = { val h = left.head; left = left.tail; h }
    }
  }

  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    count("open")
    CountingFileSystem.opened(f.toUri.getPath)
    inside(super.open(f, bufferSize))
  }

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int,
      replication: Short, blockSize: Long, progress: Progressable): FSDataOutputStream = {
    count("create")
    inside(super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress))
  }

  override def create(f: Path, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream = {
    count("create")
    inside(super.create(f, overwrite, bufferSize, replication, blockSize, progress))
  }

  override def rename(src: Path, dst: Path): Boolean = {
    count("rename")
    inside(super.rename(src, dst))
  }

  override def delete(p: Path, recursive: Boolean): Boolean = {
    count("delete")
    inside(super.delete(p, recursive))
  }

  private def inside[T](f: => T): T = {
    val was = nested.get
    nested.set(true)
    try f finally nested.set(was)
  }
}

object CountingFileSystem {
  val Scheme = "rscount"
  private val calls = new ConcurrentHashMap[String, AtomicLong]()
  private val opens = new ConcurrentHashMap[String, AtomicLong]()

  private[testing] def count(kind: String): Unit =
    calls.computeIfAbsent(kind, _ => new AtomicLong()).incrementAndGet()

  private[testing] def opened(path: String): Unit =
    opens.computeIfAbsent(path, _ => new AtomicLong()).incrementAndGet()

  /** Calls so far, by kind. */
  def counts: Map[String, Long] = calls.asScala.map { case (k, v) => k -> v.get }.toMap

  /** Opens (GETs) so far of the files whose path `which` selects. */
  def opensOf(which: String => Boolean): Long =
    opens.asScala.collect { case (p, n) if which(p) => n.get }.sum

  def reset(): Unit = {
    calls.clear()
    opens.clear()
  }
}
