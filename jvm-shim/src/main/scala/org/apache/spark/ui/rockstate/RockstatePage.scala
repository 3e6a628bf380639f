package org.apache.spark.ui.rockstate

import scala.util.Try
import scala.xml.Node

import jakarta.servlet.http.HttpServletRequest

import org.apache.spark.ui.{UIUtils, WebUIPage}

/** `/rockstate/`: `?run=<run id>&version=<v>` picks the checkpoint whose acks are shown. */
final class RockstatePage(parent: RockstateTab, entries: UiEntries) extends WebUIPage("") {
  override def render(request: HttpServletRequest): Seq[Node] = {
    val run = Option(request.getParameter("run")).filter(_.nonEmpty)
    val version = Option(request.getParameter("version")).flatMap(v => Try(v.trim.toLong).toOption)
    UIUtils.headerSparkPage(request, "rockstate: checkpoints and stores",
      TabContent(entries, run, version), parent)
  }
}
