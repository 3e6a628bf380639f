package org.apache.spark.ui.rockstate

import scala.util.Try

import jakarta.servlet.http.{HttpServlet, HttpServletRequest, HttpServletResponse}

import io.rockstate.storage.format.CheckpointJson

/**
 * The tab's data as JSON, under `/rockstate/api`:
 *  - `/runs`: every query run with its checkpoints' counts and its stores' figures;
 *  - `/runs/<run id>`: one run and its checkpoints, acknowledgements left out;
 *  - `/runs/<run id>/checkpoints/<version>`: one checkpoint with every acknowledgement;
 *  - `/executors`: every executor's stores.
 */
final class RockstateApiServlet(entries: UiEntries) extends HttpServlet {
  import RockstateApiServlet._

  override def doGet(request: HttpServletRequest, response: HttpServletResponse): Unit = {
    val parts = Option(request.getPathInfo).getOrElse("/").split('/').filter(_.nonEmpty).toList
    val answer: Either[String, AnyRef] = parts match {
      case Nil | List("runs") =>
        val byRun = entries.checkpointsByRun
        Right(entries.runs.map(r => summary(r, byRun.getOrElse(r.runId, Nil))))
      case List("runs", run) =>
        val cs = entries.checkpoints(run)
        entries.run(run).map(r => RunDetail(summary(r, cs), cs.map(_.copy(stores = Nil))))
          .toRight(s"no query run $run")
      case List("runs", run, "checkpoints", v) =>
        Try(v.toLong).toOption.flatMap(entries.checkpoint(run, _))
          .toRight(s"no checkpoint $v of query run $run")
      case List("executors") => Right(entries.executors.map(_.figures))
      case _ => Left("unknown path; try /runs, /runs/<run id>, " +
        "/runs/<run id>/checkpoints/<version> or /executors")
    }
    response.setContentType("application/json;charset=utf-8")
    answer match {
      case Right(value) =>
        response.setStatus(HttpServletResponse.SC_OK)
        response.getOutputStream.write(CheckpointJson.pretty(value))
      case Left(why) =>
        response.setStatus(HttpServletResponse.SC_NOT_FOUND)
        response.getOutputStream.write(CheckpointJson.pretty(Map("error" -> why)))
    }
  }

  private def summary(r: RunEntry, cs: Seq[CheckpointEntry]): RunSummary = {
    def count(s: String) = cs.count(_.status == s)
    RunSummary(r.queryId, r.runId, r.name, r.status, r.exception,
      cs.headOption.map(_.checkpointRoot), count(CheckpointEntry.Completed),
      count(CheckpointEntry.Aborted), count(CheckpointEntry.Pending),
      cs.reverse.find(_.status == CheckpointEntry.Completed).map(_.version), r.operators)
  }
}

object RockstateApiServlet {
  final case class RunSummary(queryId: String, runId: String, name: Option[String],
      status: String, exception: Option[String], checkpointRoot: Option[String],
      completed: Int, aborted: Int, pending: Int, latestCompleted: Option[Long],
      operators: Seq[OperatorFigures])

  final case class RunDetail(run: RunSummary, checkpoints: Seq[CheckpointEntry])
}
