package org.apache.spark.ui.rockstate

import scala.xml.{Node, NodeSeq}

import org.apache.spark.ui.UIUtils
import org.apache.spark.util.Utils

/**
 * The rockstate tab's body: per query run its checkpoints (a table and two charts), the
 * acknowledgements of the chosen checkpoint (the latest by default) and its stores' figures;
 * then every executor's stores. Every number is in a `data-value` attribute as well, exact,
 * for tools and tests. Names and reasons are text: scala.xml escapes them. Every table and
 * chart has a bounded number of rows, whatever the listener keeps; the rest are counted.
 */
object TabContent {
  private val Shown = 50 // checkpoints per run in the table; the JSON endpoint has them all
  private val Charted = 100 // ended checkpoints per run in the charts
  private val StatusColour = Map(CheckpointEntry.Completed -> "#3b7ddd",
    CheckpointEntry.Aborted -> "#b3261e", CheckpointEntry.Pending -> "#8a6d00")

  def apply(entries: UiEntries, chosenRun: Option[String], chosenVersion: Option[Long]): Seq[Node] = {
    val runs = entries.runs
    val byRun = entries.checkpointsByRun
    val style = <style>{
      """.rockstate-run{margin-bottom:28px} .rockstate-run table{margin-bottom:10px}
        |tr.aborted td{color:#b3261e} tr.pending td{color:#8a6d00}
        |.rockstate-charts{display:flex;flex-wrap:wrap;gap:16px}
        |.rockstate-chart{border:1px solid #e3e7ec;border-radius:6px}""".stripMargin
    }</style>
    val summary = {
      val all = runs.flatMap(r => byRun.getOrElse(r.runId, Nil))
      def count(status: String) = all.count(_.status == status)
      <ul class="list-unstyled" id="rockstate-summary">
        <li><strong>Query runs: </strong><span data-value={runs.size.toString}>{runs.size}</span></li>
        <li><strong>Checkpoints completed: </strong>
          <span id="rockstate-completed">{count(CheckpointEntry.Completed)}</span>,
          <strong>aborted: </strong><span id="rockstate-aborted">{count(CheckpointEntry.Aborted)}</span>,
          <strong>pending: </strong><span id="rockstate-pending">{count(CheckpointEntry.Pending)}</span></li>
        <li>The same as JSON: <a href="api/runs">api/runs</a></li>
        {entries.ignored.map(i => <li id="rockstate-ignored"><strong>Events not shown: </strong>
          <span data-value={i.count.toString}>{i.count}</span> rockstate events in this
          application's log could not be read (the first: {i.first})</li>).getOrElse(NodeSeq.Empty)}
      </ul>
    }
    val body = if (runs.isEmpty) {
      <p id="rockstate-empty">No query has rockstate checkpoints or stores yet.</p>
    } else NodeSeq.fromSeq(runs.flatMap(r => runSection(entries, r,
      byRun.getOrElse(r.runId, Nil), chosenVersion.filter(_ => chosenRun.contains(r.runId)))))
    style ++ summary ++ body ++ executors(entries.executors)
  }

  private def runSection(entries: UiEntries, run: RunEntry, checkpoints: Seq[CheckpointEntry],
      version: Option[Long]): Seq[Node] = {
    val chosen = version.flatMap(v => checkpoints.find(_.version == v))
      .orElse(checkpoints.reverse.find(_.status == CheckpointEntry.Completed))
      .orElse(checkpoints.lastOption)
    val shown = checkpoints.takeRight(Shown).reverse
    <div class="rockstate-run" id={"run-" + run.runId} data-run={run.runId}>
      <h4>Query <span class="rockstate-name">{run.name.getOrElse("(unnamed)")}</span></h4>
      <ul class="list-unstyled">
        <li><strong>Query id: </strong>{run.queryId}, <strong>run id: </strong>{run.runId},
          <strong>status: </strong><span class="rockstate-status">{run.status}</span></li>
        {checkpoints.headOption.map(c => <li><strong>Checkpoint location: </strong>{c.checkpointRoot}</li>).getOrElse(NodeSeq.Empty)}
        {run.exception.map(e => <li><strong>Failed: </strong>{e}</li>).getOrElse(NodeSeq.Empty)}
      </ul>
      <h5>Checkpoints{if (checkpoints.size > Shown) s" (the newest $Shown of ${checkpoints.size})" else ""}</h5>
      {if (checkpoints.isEmpty) <p>None yet.</p> else checkpointTable(run, shown)}
      {charts(run, checkpoints)}
      {chosen.map(c => acknowledgements(c, entries.acknowledgements(c, 0, UiLimits.ShownRows)))
        .getOrElse(NodeSeq.Empty)}
      {operators(run)}
    </div>
  }

  private def checkpointTable(run: RunEntry, shown: Seq[CheckpointEntry]): Node =
    <table class="table table-bordered table-sm rockstate-checkpoints">
      <thead><tr><th>Checkpoint</th><th>Batch</th><th>Status</th><th>Triggered</th>
        <th>Duration</th><th>Acknowledged</th><th>State size</th><th>Uploaded</th>
        <th>Reused</th><th>Keys</th><th>Reason</th></tr></thead>
      <tbody>{shown.map { c =>
        val t = c.totals
        <tr class={c.status} data-version={c.version.toString}>
          <td><a href={s"?run=${c.runId}&version=${c.version}#acks-${c.runId}"}>{c.version}</a></td>
          <td>{c.batchId}</td>
          <td class="status">{c.status}</td>
          <td data-value={c.triggeredAtMs.toString}>{UIUtils.formatDate(c.triggeredAtMs)}</td>
          {millis("duration", c.durationMs)}
          <td class="acknowledged" data-value={c.acknowledged.toString}>{s"${c.acknowledged} / ${c.expected}"}</td>
          {bytes("state", t.map(_.stateBytes))}
          {bytes("uploaded", t.map(_.bytesUploaded))}
          {bytes("reused", t.map(_.bytesReused))}
          {number("keys", t.map(_.numKeys))}
          <td class="reason">{c.reason.getOrElse("")}</td>
        </tr>
      }}</tbody>
    </table>

  private def charts(run: RunEntry, checkpoints: Seq[CheckpointEntry]): Node = {
    val ended = checkpoints.filter(_.status != CheckpointEntry.Pending).takeRight(Charted)
    val completed = ended.filter(_.status == CheckpointEntry.Completed)
    val duration = if (ended.isEmpty) BarChart.empty("Checkpoint duration") else {
      BarChart(s"duration-${run.runId}", "Checkpoint duration", UIUtils.formatDuration,
        ended.map(_.version.toString),
        Seq(BarChart.Series("completed", StatusColour(CheckpointEntry.Completed),
          ended.map(c => math.max(0L, c.durationMs)))),
        (_, i) => StatusColour(ended(i).status))
    }
    val size = if (completed.isEmpty) BarChart.empty("Checkpoint size") else {
      BarChart(s"size-${run.runId}", "Checkpoint size: uploaded and reused", Utils.bytesToString,
        completed.map(_.version.toString),
        Seq(BarChart.Series("uploaded", "#e8710a", completed.map(_.totals.map(_.bytesUploaded).getOrElse(0L))),
          BarChart.Series("reused (shared SSTs)", "#8bb7f0",
            completed.map(_.totals.map(_.bytesReused).getOrElse(0L)))))
    }
    <div class="rockstate-charts">{duration}{size}</div>
  }

  private def acknowledgements(c: CheckpointEntry, shown: Seq[AckEntry]): Seq[Node] = {
    val stores = shown.map(_.store)
    // Executors' clocks, not the driver's: spread from the store that acknowledged first.
    val first = stores.map(_.ackedAtMs).minOption.getOrElse(0L)
    val notShown: NodeSeq = if (c.acknowledged <= stores.size) NodeSeq.Empty else {
      <p class="rockstate-acks-cut" data-value={(c.acknowledged - stores.size).toString}>{
        s"${stores.size} of ${c.acknowledged} acknowledgements shown: " + (
          if (c.acksKept > stores.size) s"the page shows at most ${UiLimits.ShownRows}; all " +
            s"${c.acksKept} kept are in api/runs/<run id>/checkpoints/${c.version}"
          else s"${c.acknowledged - c.acksKept} were not kept: " +
            s"${UiLimits.RetainedAcknowledgements} bounds those kept over the application")}</p>
    }
    <h5 id={"acks-" + c.runId}>Acknowledgements of checkpoint
      <span class="rockstate-chosen">{c.version}</span> ({c.status}, {c.acknowledged} of {c.expected} stores)</h5> ++
    notShown ++
    <table class="table table-bordered table-sm rockstate-acks" data-version={c.version.toString}>
      <thead><tr><th>Operator</th><th>Store</th><th>Partition</th><th>Executor</th>
        <th>After the first</th><th>Sync</th><th>Async</th><th>State size</th>
        <th>Incremental</th><th>Reused</th><th>Files new / reused</th><th>Keys</th></tr></thead>
      <tbody>{stores.sortBy(s => (s.operatorId, s.storeName, s.partitionId)).map { s =>
        val f = s.figures
        <tr data-partition={s.partitionId.toString} data-operator={s.operatorId.toString}
            data-store={s.storeName}>
          <td>{s.operatorId}</td><td>{s.storeName}</td><td>{s.partitionId}</td>
          <td class="executor">{s.executorId}</td>
          {millis("after", s.ackedAtMs - first)}
          {millis("sync", f.syncMs)}{millis("async", f.asyncMs)}
          {bytes("state", Some(f.stateBytes))}{bytes("uploaded", Some(f.bytesUploaded))}
          {bytes("reused", Some(f.bytesReused))}
          <td class="files">{s"${f.filesUploaded} / ${f.filesReused}"}</td>
          {number("keys", Some(f.numKeys))}
        </tr>
      }}</tbody>
    </table>
  }

  private def operators(run: RunEntry): Seq[Node] = if (run.operators.isEmpty) Nil else
    <h5>Stores, at the latest batch</h5>
    <table class="table table-bordered table-sm rockstate-operators">
      <thead><tr><th>Operator</th><th>Batch</th><th>Partitions</th><th>Rows</th>
        <th>Rows updated</th><th>Memory</th><th>Commit</th><th>Load</th><th>Downloaded</th>
        <th>Changelogs replayed</th><th>Snapshot uploads</th><th>State files</th></tr></thead>
      <tbody>{run.operators.map { o =>
        <tr>
          <td>{o.operatorName}</td><td>{o.batchId}</td><td>{o.numShufflePartitions}</td>
          {number("rows", Some(o.numRowsTotal))}{number("updated", Some(o.numRowsUpdated))}
          {bytes("memory", Some(o.memoryUsedBytes))}{millis("commit", o.commitTimeMs)}
          {millis("load", o.metric("rockstateLoadMs"))}
          {bytes("downloaded", Some(o.metric("rockstateBytesDownloaded")))}
          {number("replayed", Some(o.metric("rockstateChangelogsReplayed")))}
          {bytes("snapshot", Some(o.metric("rockstateBytesUploaded")))}
          {bytes("files", Some(o.metric("rockstateStateBytes")))}
        </tr>
      }}</tbody>
    </table>

  private def executors(all: Seq[ExecutorEntry]): Seq[Node] = if (all.isEmpty) Nil else
    <h4>Executors{if (all.size > UiLimits.ShownRows) s" (the first ${UiLimits.ShownRows} of " +
      s"${all.size}; all in api/executors)" else ""}</h4>
    <table class="table table-bordered table-sm rockstate-executors">
      <thead><tr><th>Executor</th><th>Open stores</th><th>RocksDB instances</th>
        <th>RocksDB memory</th><th>Memory bound</th><th>Local files</th>
        <th>Uploads in flight</th><th>Reported</th></tr></thead>
      <tbody>{all.take(UiLimits.ShownRows).map { e =>
        val f = e.figures
        <tr data-executor={e.executorId}>
          <td>{e.executorId}</td>{number("stores", Some(f.openStores.toLong))}
          {number("instances", Some(f.rocksdbInstancesOpen.toLong))}
          {bytes("memory", Some(f.rocksdbMemoryUsedBytes))}
          {bytes("bound", Some(f.rocksdbMemoryCapacityBytes))}
          {bytes("local", Some(f.localCacheBytes))}
          {number("uploads", Some(f.snapshotUploadsInFlight.toLong))}
          <td data-value={f.reportedAtMs.toString}>{UIUtils.formatDate(f.reportedAtMs)}</td>
        </tr>
      }}</tbody>
    </table>

  private def bytes(name: String, v: Option[Long]): Node = v match {
    case Some(b) => <td class={name} data-value={b.toString}>{Utils.bytesToString(b)}</td>
    case None => <td class={name}></td>
  }

  private def number(name: String, v: Option[Long]): Node = v match {
    case Some(n) => <td class={name} data-value={n.toString}>{f"$n%,d"}</td>
    case None => <td class={name}></td>
  }

  private def millis(name: String, ms: Long): Node =
    if (ms < 0) <td class={name}></td>
    else <td class={name} data-value={ms.toString}>{UIUtils.formatDuration(ms)}</td>
}
