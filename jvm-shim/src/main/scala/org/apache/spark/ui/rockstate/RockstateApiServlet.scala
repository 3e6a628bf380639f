package org.apache.spark.ui.rockstate

import scala.util.Try

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode
import jakarta.servlet.http.{HttpServlet, HttpServletRequest, HttpServletResponse}

import io.rockstate.storage.format.CheckpointJson

/**
 * The tab's data as JSON, under `/rockstate/api`:
 *  - `/runs`: every query run with its checkpoints' counts and its stores' figures;
 *  - `/runs/<run id>`: one run and its checkpoints, acknowledgements left out;
 *  - `/runs/<run id>/checkpoints/<version>`: one checkpoint with its acknowledgements, at most
 *    `UiLimits.ApiPage` of them: `?offset=N` gives the next ones (`nextOffset` says where);
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
        entries.run(run).map(r => RunDetail(summary(r, cs), cs)).toRight(s"no query run $run")
      case List("runs", run, "checkpoints", v) =>
        val offset = Option(request.getParameter("offset")).flatMap(o => Try(o.trim.toInt).toOption)
          .filter(_ >= 0).getOrElse(0)
        Try(v.toLong).toOption.flatMap(entries.checkpoint(run, _)).map(detail(_, offset))
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

  /** The checkpoint's fields, with a page of its acknowledgements as `stores`. */
  private def detail(c: CheckpointEntry, offset: Int): ObjectNode = {
    val stores = entries.acknowledgements(c, offset, UiLimits.ApiPage).map(_.store)
    val node = CheckpointJson.mapper.valueToTree[ObjectNode](c)
    node.set[JsonNode]("stores", CheckpointJson.mapper.valueToTree[JsonNode](stores))
    node.put("storesOffset", offset)
    if (offset + stores.size < c.acksKept) node.put("nextOffset", offset + stores.size)
    node
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
