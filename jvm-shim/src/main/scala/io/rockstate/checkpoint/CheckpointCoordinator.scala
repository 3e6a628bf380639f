package io.rockstate.checkpoint

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.internal.Logging

import io.rockstate.storage.format.{CheckpointJson, StateVersion}

/**
 * The driver's checkpoint coordinator (Flink's CheckpointCoordinator, with the first
 * acknowledgement of a version as its trigger): one pending checkpoint per (query run, state
 * version that is a multiple of the snapshot interval), expecting every store instance of the
 * query. Settings are the run's own, from its first message. When all have acknowledged, the checkpoint's metadata is written atomically, older
 * pending ones are subsumed, and completed ones beyond `retained` are dropped. A pending
 * checkpoint older than the timeout is aborted; more than `tolerableFailures` failures in a
 * row fail the query through `failQuery`. Thread-safe; every call is quick except completion,
 * which writes one small file. Each counted acknowledgement, completion and abort goes to
 * `publish` (Spark's listener bus, for the event log and the rockstate tab), in that order.
 */
final class CheckpointCoordinator(
    hadoopConf: Configuration,
    clock: () => Long,
    expectedStores: String => Either[String, Set[StoreKey]],
    failQuery: (String, String) => Unit,
    publish: CheckpointEvent => Unit = _ => ()) extends Logging {

  import CheckpointCoordinator._

  private final class Run(val source: AckSource) {
    def settings: CoordinatorSettings = source.settings
    val files = new CheckpointFiles(source.checkpointRoot, hadoopConf)
    var expected: Either[String, Set[StoreKey]] = Left("not read yet")
    var expectedReadAtMs: Long = Long.MinValue / 2 // never read
    val pending = mutable.TreeMap.empty[Long, PendingCheckpoint]
    var completed: Vector[CheckpointMetadata] = Vector.empty
    var latestCompleted: Long = -1L
    val aborted = mutable.LinkedHashMap.empty[Long, AbortedCheckpoint]
    var consecutiveFailures = 0
    var failure: Option[String] = None
    // Acks that came before Spark's QueryStartedEvent of this run reached the driver's
    // listener (the bus is asynchronous): replayed once it does.
    val early = mutable.ArrayBuffer.empty[SnapshotAck]
  }

  private val runs = mutable.LinkedHashMap.empty[String, Run] // by run id, oldest first
  private val runAtRoot = mutable.Map.empty[String, String] // checkpoint root -> run id
  // Runs Spark announced (QueryStartedEvent), in the order it started them.
  private val started = mutable.LinkedHashMap.empty[String, Long]
  private var startSeq = 0L
  private val completions = mutable.Queue.empty[(Long, String, Long)] // (seq, run id, version)

  /** Running totals for Spark's metrics system (read from its reporting threads). */
  val stats = new CoordinatorStats(() => synchronized(runs.values.map(_.pending.size).sum))
  private var completionSeq = 0L

  // ---- acknowledgements ----

  def acknowledge(ack: SnapshotAck): AckResult = synchronized {
    val run = runFor(ack.source)
    if (!holdsRoot(run) && !started.contains(run.source.runId) && run.early.size < MaxEarlyAcks) {
      run.early += ack
    }
    val v = ack.source.version
    val result = pendingFor(run, v, ack.source.store) match {
      case Left(result) => result
      case Right(p) =>
        val r = p.acknowledge(shared(run, ack))
        if (r == AckResult.Success) {
          tell(CheckpointAcknowledged(run.source.queryId, run.source.runId,
            run.source.checkpointRoot, v, p.triggeredAtMs, p.expected.size,
            AcknowledgedStore.of(ack)))
          if (p.isFullyAcknowledged) tryComplete(run, p)
        }
        r
    }
    if (result != AckResult.Success) {
      logInfo(s"rockstate checkpoint $v of run ${run.source.runId}: $result acknowledgement " +
        s"from ${ack.source.store} on executor ${ack.source.executorId}; its snapshot is " +
        "left to the store's cleanup")
    }
    result
  }

  /**
   * `ack` holding its run's strings (query, run, location, settings) instead of its own
   * deserialized copies: a pending checkpoint of 10k stores holds 10k acknowledgements.
   */
  private def shared(run: Run, ack: SnapshotAck): SnapshotAck = {
    val s = run.source
    val source = ack.source
    if (source.queryId != s.queryId || source.runId != s.runId ||
      source.checkpointRoot != s.checkpointRoot || source.settings != s.settings) ack
    else ack.copy(source = source.copy(queryId = s.queryId, runId = s.runId,
      checkpointRoot = s.checkpointRoot, settings = s.settings),
      versionManifest = if (ack.versionManifest == ack.stateId) ack.stateId
        else ack.versionManifest)
  }

  /** A store cannot provide a checkpoint: it is aborted (Flink's declineCheckpoint). */
  def decline(d: SnapshotDecline): AckResult = synchronized {
    val run = runFor(d.source)
    pendingFor(run, d.source.version, d.source.store) match {
      case Left(result) => result
      case Right(p) =>
        abort(run, p, s"declined by ${d.source.store} on executor ${d.source.executorId}: " +
          d.reason, d.countsAsFailure)
        AckResult.Success
    }
  }

  /**
   * Completes fully acknowledged checkpoints whose batch Spark has committed meanwhile, and
   * aborts every pending checkpoint older than the timeout.
   */
  def checkTimeouts(): Unit = synchronized {
    val now = clock()
    runs.values.foreach { run =>
      run.pending.values.filter(_.isFullyAcknowledged).toSeq.foreach(tryComplete(run, _))
      val timeoutMs = run.settings.timeoutMs
      run.pending.values.filter(p => now - p.triggeredAtMs > timeoutMs).toSeq.foreach {
        p =>
          val missing = p.missing
          val why = if (missing.isEmpty) {
            s"every store acknowledged but Spark did not commit batch " +
              s"${StateVersion.batchOf(p.version)} (the " +
              "batch failed or was stopped)"
          } else {
            s"${missing.size} of ${p.expected.size} stores not acknowledged " +
              s"(${missing.take(4).mkString("; ")}${if (missing.size > 4) "; ..." else ""})"
          }
          abort(run, p, s"expired after $timeoutMs ms with $why", countsAsFailure = true)
      }
    }
  }

  /** Spark started query run `runId` (its QueryStartedEvent): it owns its location from now. */
  def runStarted(runId: String): Unit = synchronized {
    startSeq += 1
    started(runId) = startSeq
    while (started.size > MaxRuns * 4) started.remove(started.head._1)
    runs.get(runId).foreach { run =>
      claimRoot(run)
      val early = run.early.toSeq
      run.early.clear()
      if (holdsRoot(run)) early.foreach(acknowledge)
    }
  }

  private def holdsRoot(run: Run): Boolean =
    runAtRoot.get(run.source.checkpointRoot).contains(run.source.runId)

  // ---- what executors and Python ask ----

  /** The decisions executors need to release what they kept for pending checkpoints. */
  def outcomes(roots: Seq[String]): Outcomes = synchronized {
    Outcomes(roots.flatMap(root => runAtRoot.get(root).flatMap(runs.get)).map { run =>
      RootOutcome(run.source.checkpointRoot, run.latestCompleted,
        run.completed.map(_.version), run.aborted.keys.toSeq)
    })
  }

  def view(runId: String): Option[RunView] = synchronized {
    runs.get(runId).map { run =>
      RunView(run.source.queryId, runId, run.source.checkpointRoot, run.source.snapshotInterval,
        run.expected.map(_.size).getOrElse(0), run.expected.left.toOption,
        run.pending.values.toSeq.map(p => PendingView(p.version, p.triggeredAtMs,
          p.acknowledged.map(AcknowledgedStore.of), p.missing)),
        run.completed, run.aborted.values.toSeq, run.consecutiveFailures, run.failure)
    }
  }

  /** Why a run was failed, if it was. */
  def failureOf(runId: String): Option[String] = synchronized(runs.get(runId).flatMap(_.failure))

  /** Completions after sequence number `after`, as (sequence, run id, version). */
  def completedSince(after: Long): Seq[(Long, String, Long)] = synchronized {
    completions.filter(_._1 > after).toSeq
  }

  // ---- internals ----

  // What the tab shows must never stop a checkpoint.
  private def tell(event: CheckpointEvent): Unit = try publish(event) catch {
    case NonFatal(e) => logDebug(s"rockstate: could not publish $event", e)
  }

  private def runFor(source: AckSource): Run = runs.getOrElse(source.runId, {
    val run = new Run(source)
    runs(source.runId) = run
    claimRoot(run)
    while (runs.size > MaxRuns) {
      val (oldest, old) = runs.head
      runs.remove(oldest)
      if (runAtRoot.get(old.source.checkpointRoot).contains(oldest)) {
        runAtRoot.remove(old.source.checkpointRoot)
      }
    }
    seedCompleted(run)
    run
  })

  /**
   * Makes `run` the one whose decisions executors of its location follow, unless a run Spark
   * started later holds it: a late acknowledgement of an old run (or of a run this driver
   * never saw start) never displaces the live one. The displaced run's pending checkpoints
   * can no longer complete.
   */
  private def claimRoot(run: Run): Unit = {
    val root = run.source.checkpointRoot
    val holder = runAtRoot.get(root).flatMap(runs.get).filterNot(_ eq run)
    val takes = holder.forall { h =>
      (started.get(run.source.runId), started.get(h.source.runId)) match {
        case (Some(mine), Some(theirs)) => mine > theirs
        case (Some(_), None) => true
        case (None, _) => false
      }
    }
    if (takes && !runAtRoot.get(root).contains(run.source.runId)) {
      holder.foreach { old =>
        old.pending.values.toSeq.foreach(abort(old, _, s"query restarted as run " +
          run.source.runId, countsAsFailure = false))
      }
      runAtRoot(root) = run.source.runId
    } else if (!takes) {
      logWarning(s"rockstate: acknowledgements of run ${run.source.runId} at $root arrive " +
        s"while run ${holder.get.source.runId} holds it; that run stays the one executors follow")
    }
  }

  /** Completed checkpoints of earlier runs at the same location stay retained. */
  private def seedCompleted(run: Run): Unit = try {
    val found = run.files.completedVersions().flatMap { v =>
      try Some(run.files.read(v)) catch {
        case NonFatal(e) =>
          logWarning(s"rockstate: completed checkpoint $v at ${run.source.checkpointRoot} " +
            "is unreadable; it is not counted as retained", e)
          None
      }
    }
    run.completed = found.toVector
    run.latestCompleted = found.lastOption.map(_.version).getOrElse(-1L)
  } catch {
    case NonFatal(e) => logWarning(s"rockstate: cannot list the completed checkpoints at " +
      s"${run.source.checkpointRoot}; starting without them", e)
  }

  /** The pending checkpoint of `version`, created at its first message, or why there is none. */
  private def pendingFor(run: Run, version: Long,
      store: StoreKey): Either[AckResult, PendingCheckpoint] = {
    val interval = run.source.snapshotInterval
    // Only the run holding the location checkpoints it: a displaced run's completion would
    // apply its stale retention to the live run's checkpoints.
    if (run.failure.isDefined || !holdsRoot(run)) Left(AckResult.Discarded)
    else if (!StateVersion.isCheckpoint(version, interval)) Left(AckResult.Unknown)
    else if (run.aborted.contains(version) || version <= run.latestCompleted) {
      Left(AckResult.Discarded)
    } else run.pending.get(version) match {
      case Some(p) => Right(p)
      case None =>
        expectedOf(run) match {
          case Left(_) => Left(AckResult.Unknown)
          case Right(expected) if !expected.contains(store) => Left(AckResult.Unknown)
          case Right(expected) =>
            val p = new PendingCheckpoint(version, expected, clock())
            run.pending(version) = p
            Right(p)
        }
    }
  }

  private def expectedOf(run: Run): Either[String, Set[StoreKey]] = {
    val now = clock()
    if (run.expected.isLeft && now - run.expectedReadAtMs >= ExpectedRetryMs) {
      run.expectedReadAtMs = now
      run.expected = try expectedStores(run.source.checkpointRoot) catch {
        case NonFatal(e) => Left(s"reading Spark's operator metadata failed: ${e.getMessage}")
      }
      run.expected.left.foreach { why =>
        logWarning(s"rockstate: checkpoints of run ${run.source.runId} are not tracked yet: " +
          s"which stores the query has is unknown ($why)")
      }
    }
    run.expected
  }

  // Completion checks each store's files on these threads: on an object store a store's
  // listing and manifest read take a round trip each, thousands of stores many seconds.
  private val checks = java.util.concurrent.Executors.newFixedThreadPool(CheckThreads, r => {
    val t = new Thread(r, "rockstate-checkpoint-check")
    t.setDaemon(true)
    t
  })

  /** Completes `p` if the checkpoint location bears it out (see CompletionCheck). */
  private def tryComplete(run: Run, p: PendingCheckpoint): Unit =
    CompletionCheck.of(run.files, p, checks) match {
      case CompletionCheck.BatchNotCommitted => // checked again at the next tick
      case CompletionCheck.Stale(stale) =>
        stale.foreach { case (k, acks) => p.forget(k, acks) }
        logInfo(s"rockstate checkpoint ${p.version} of run ${run.source.runId}: " +
          s"${stale.size} stores acknowledged snapshots of attempts whose version was " +
          "replaced; waiting for their landed attempt's snapshot")
      case CompletionCheck.Broken(reason) => abort(run, p, reason, countsAsFailure = true)
      case CompletionCheck.Ready(acks) => complete(run, p, acks)
    }

  private def complete(run: Run, p: PendingCheckpoint, acks: Seq[SnapshotAck]): Unit = {
    val metadata = CheckpointMetadata.build(p.version, run.source.queryId, run.source.runId,
      p.triggeredAtMs, clock(), acks)
    try run.files.write(metadata) catch {
      case NonFatal(e) =>
        abort(run, p, s"writing ${run.files.metadataPath(p.version)} failed: ${e.getMessage}",
          countsAsFailure = true)
        return
    }
    try run.files.sweepTemporary(run.files.metadataTime(p.version), run.settings.timeoutMs) catch {
      case NonFatal(e) => logDebug("rockstate: sweeping temporary metadata files failed", e)
    }
    p.dispose()
    run.pending.remove(p.version)
    run.completed = (run.completed.filter(_.version != p.version) :+ metadata).sortBy(_.version)
    run.latestCompleted = p.version
    run.consecutiveFailures = 0
    run.pending.values.filter(_.version < p.version).toSeq.foreach { older =>
      abort(run, older, s"subsumed by checkpoint ${p.version}", countsAsFailure = false)
    }
    while (run.completed.size > run.settings.retained) {
      val dropped = run.completed.head
      run.completed = run.completed.tail
      try run.files.delete(dropped.version) catch {
        case NonFatal(e) => logWarning(s"rockstate: cannot delete the metadata of checkpoint " +
          s"${dropped.version}; it stays retained until a later completion deletes it", e)
      }
    }
    stats.completed(metadata)
    tell(CheckpointCompleted(run.source.queryId, run.source.runId, run.source.checkpointRoot,
      p.version, p.triggeredAtMs, metadata.completedAtMs, metadata.totals))
    completionSeq += 1
    completions.enqueue((completionSeq, run.source.runId, p.version))
    while (completions.size > MaxCompletionsKept) completions.dequeue()
    logInfo(s"rockstate checkpoint ${p.version} of run ${run.source.runId} completed: " +
      s"${metadata.totals.stores} stores, ${metadata.totals.stateBytes} bytes of state, " +
      s"${metadata.totals.bytesUploaded} bytes uploaded, in " +
      s"${metadata.completedAtMs - metadata.triggeredAtMs} ms from the first acknowledgement")
  }

  private def abort(run: Run, p: PendingCheckpoint, reason: String,
      countsAsFailure: Boolean): Unit = {
    p.dispose()
    run.pending.remove(p.version)
    val aborted = AbortedCheckpoint(p.version, reason, countsAsFailure, clock(),
      p.acknowledged.size, p.expected.size)
    run.aborted(p.version) = aborted
    while (run.aborted.size > MaxAbortedKept) run.aborted.remove(run.aborted.head._1)
    stats.aborted(countsAsFailure)
    val event = CheckpointAborted(run.source.queryId, run.source.runId,
      run.source.checkpointRoot, p.version, p.triggeredAtMs, aborted)
    tell(event)
    // Kept for the offline report; the checkpoint protocol never reads it back.
    try run.files.writeAborted(AbortedCheckpointFile.of(event)) catch {
      case NonFatal(e) => logWarning(s"rockstate: cannot record aborted checkpoint " +
        s"${p.version} at ${run.files.abortedPath(p.version)}", e)
    }
    logWarning(s"rockstate checkpoint ${p.version} of run ${run.source.runId} aborted: $reason")
    if (countsAsFailure && run.failure.isEmpty) {
      run.consecutiveFailures += 1
      val tolerable = run.settings.tolerableFailures
      if (tolerable >= 0 && run.consecutiveFailures > tolerable) {
        val message = s"rockstate: ${run.consecutiveFailures} checkpoints of query " +
          s"${run.source.queryId} failed in a row, more than tolerableCheckpointFailures " +
          s"($tolerable) allows; the last one, ${p.version}, $reason. The state of every " +
          "committed batch is intact. Fix the cause, or raise spark.sql.streaming." +
          "stateStore.rockstate.tolerableCheckpointFailures (-1 never fails the query), " +
          "then restart the query."
        run.failure = Some(message)
        run.pending.values.toSeq.foreach { other =>
          other.dispose()
          run.pending.remove(other.version)
          tell(CheckpointAborted(run.source.queryId, run.source.runId,
            run.source.checkpointRoot, other.version, other.triggeredAtMs,
            AbortedCheckpoint(other.version, "the query was failed: " + message,
              countsAsFailure = false, clock(), other.acknowledged.size, other.expected.size)))
        }
        failQuery(run.source.runId, message)
      }
    }
  }
}

object CheckpointCoordinator {
  private val MaxRuns = 64
  private val MaxAbortedKept = 64
  private val MaxCompletionsKept = 1000
  private val ExpectedRetryMs = 5000L
  private val MaxEarlyAcks = 10000
  private val CheckThreads = 64

  def json(value: AnyRef): String = new String(CheckpointJson.pretty(value), "UTF-8")
}
