package io.rockstate.testing

import java.io.{File, IOException}
import java.net.URI
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.JsonNode
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FSDataOutputStream, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

import org.apache.spark.SparkEnv

import io.rockstate.storage.format.CheckpointJson

/**
 * A Hadoop FileSystem over the local disk, scheme `rsfault`, that injects faults at exact
 * points: rockstate's fault tests and torture suite point a checkpoint location at
 * `rsfault:///...` (set `fs.rsfault.impl` to this class). Rules are set in the JVM (tests) or
 * read from the JSON plan file named by the Hadoop setting `fs.rsfault.plan`, re-read when it
 * changes, so an orchestrator steers executors in other processes:
 *
 * {{{ {"rules": [{"op": "rename", "pathRegex": "/manifests/\\d+\\.json$", "when": "after",
 *      "action": "halt", "nth": 3, "process": "executor"}],
 *     "skewMs": -3600000, "skewExecutors": "odd"} }}}
 *
 * `skewMs` shifts every modification time this process reports, as a machine whose clock is
 * off would see storage time; `skewExecutors` says where ("all", "odd" or "even" executor
 * ids). Each rule fires once per process, or on every match (`"every": true`); a plan rule
 * with an `id` fires once across all processes (it leaves `fired-<id>` beside the plan first,
 * so a replacement executor does not die at the same point again). Never used unless a location says `rsfault://`.
 */
class FaultInjectingFileSystem extends RawLocalFileSystem {
  import FaultInjectingFileSystem._

  private var planFile: Option[File] = None

  override def getScheme: String = Scheme
  override def getUri: URI = URI.create(s"$Scheme:///")

  override def initialize(uri: URI, conf: Configuration): Unit = {
    super.initialize(uri, conf)
    planFile = Option(conf.get("fs.rsfault.plan")).filter(_.nonEmpty).map(new File(_))
  }

  // RawLocalFileSystem maps a path to a file by its URI path, whatever the scheme.
  override def pathToFile(path: Path): File = {
    val p = if (path.isAbsolute) path else new Path(getWorkingDirectory, path)
    new File(p.toUri.getPath)
  }

  private def inject(op: String, path: Path, when: String): Unit =
    FaultInjectingFileSystem.inject(planFile, op, path.toUri.getPath, when)

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int,
      replication: Short, blockSize: Long, progress: Progressable): FSDataOutputStream = {
    inject("create", f, "before")
    val out = super.create(f, permission, overwrite, bufferSize, replication, blockSize,
      progress)
    new FSDataOutputStream(out, null) {
      override def close(): Unit = {
        super.close()
        inject("create", f, "after")
      }
    }
  }

  override def create(f: Path, overwrite: Boolean, bufferSize: Int, replication: Short,
      blockSize: Long, progress: Progressable): FSDataOutputStream =
    create(f, FsPermission.getFileDefault, overwrite, bufferSize, replication, blockSize, progress)

  override def rename(src: Path, dst: Path): Boolean = {
    inject("rename", dst, "before")
    val done = super.rename(src, dst)
    inject("rename", dst, "after")
    done
  }

  override def delete(p: Path, recursive: Boolean): Boolean = {
    inject("delete", p, "before")
    val done = super.delete(p, recursive)
    inject("delete", p, "after")
    done
  }

  override def open(f: Path, bufferSize: Int): org.apache.hadoop.fs.FSDataInputStream = {
    inject("open", f, "before")
    super.open(f, bufferSize)
  }

  override def listStatus(f: Path): Array[FileStatus] = super.listStatus(f).map(skewed)
  override def getFileStatus(f: Path): FileStatus = skewed(super.getFileStatus(f))

  // Always a plain status: the local one loads its permissions lazily from a file: URI, which
  // fails on this scheme (recursive listings read them).
  private def skewed(st: FileStatus): FileStatus =
    new FileStatus(st.getLen, st.isDirectory, st.getReplication, st.getBlockSize,
      st.getModificationTime + skewMs(planFile), st.getPath)
}

object FaultInjectingFileSystem {
  val Scheme = "rsfault"

  /** Rules set in this JVM (tests); the plan file's are added to them. */
  @volatile private var localRules: Seq[FaultRule] = Nil
  @volatile private var localSkewMs = 0L
  private val seen = new ConcurrentHashMap[FaultRule, AtomicInteger]()
  @volatile private var plan: (Long, Seq[FaultRule], Long, String) = (-1L, Nil, 0L, "all")

  def setRules(rules: Seq[FaultRule]): Unit = { localRules = rules; seen.clear() }
  def setSkewMs(ms: Long): Unit = localSkewMs = ms
  def reset(): Unit = { localRules = Nil; localSkewMs = 0; seen.clear() }

  private def executorId: String =
    Option(SparkEnv.get).map(_.executorId).getOrElse("driver")

  private def inProcess(process: String): Boolean = process match {
    case "any" => true
    case "driver" => executorId == "driver"
    case _ => executorId != "driver"
  }

  private def planRules(file: Option[File]): (Seq[FaultRule], Long, String) = file match {
    case Some(f) if f.isFile =>
      val stamp = f.lastModified() ^ f.length()
      if (plan._1 != stamp) synchronized {
        val tree: JsonNode = CheckpointJson.mapper.readTree(
          new String(Files.readAllBytes(f.toPath), StandardCharsets.UTF_8))
        val rules = tree.path("rules").elements().asScala.map { r =>
          FaultRule(r.path("op").asText(), r.path("pathRegex").asText(), r.path("when")
            .asText("before"), r.path("action").asText(), r.path("nth").asInt(1),
            r.path("process").asText("executor"), r.path("id").asText(""),
            r.path("every").asBoolean(false), r.path("thread").asText(""))
        }.toSeq
        plan = (stamp, rules, tree.path("skewMs").asLong(0), tree.path("skewExecutors")
          .asText("all"))
      }
      (plan._2, plan._3, plan._4)
    case _ => (Nil, 0L, "all")
  }

  private def skewMs(file: Option[File]): Long = {
    val (_, ms, where) = planRules(file)
    val fromPlan = if (ms == 0) 0L else {
      val id = executorId.toIntOption
      val applies = where match {
        case "all" => true
        case "odd" => id.exists(_ % 2 == 1)
        case "even" => id.exists(_ % 2 == 0)
        case other => executorId == other
      }
      if (applies) ms else 0L
    }
    localSkewMs + fromPlan
  }

  private[testing] def inject(file: Option[File], op: String, path: String, when: String): Unit = {
    val rules = localRules ++ planRules(file)._1
    def fired(r: FaultRule): Option[File] =
      if (r.id.isEmpty) None else file.map(f => new File(f.getAbsoluteFile.getParentFile, s"fired-${r.id}"))
    rules.find(r => r.matches(op, path, when) && inProcess(r.process) &&
      !fired(r).exists(_.exists)).foreach { r =>
      val n = seen.computeIfAbsent(r, _ => new AtomicInteger()).incrementAndGet()
      if (r.every || (n == r.nth && fired(r).forall(_.createNewFile()))) {
        System.err.println(s"rockstate fault injection: ${r.action} $when $op $path " +
          s"(executor $executorId)")
        System.err.flush()
        r.action match {
          case "halt" => Runtime.getRuntime.halt(137)
          case "fail" => throw new IOException(s"rockstate fault injection: $op $path failed")
          case a if a.startsWith("pause:") => Thread.sleep(a.stripPrefix("pause:").toLong)
          case other => throw new IllegalArgumentException(s"unknown fault action $other")
        }
      }
    }
  }
}
