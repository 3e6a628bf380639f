package org.apache.spark.ui.rockstate

import jakarta.servlet.http.HttpServlet

import org.apache.spark.ui.{SparkUI, SparkUITab}

/**
 * The "rockstate" tab at `/rockstate/` under the UI's root (Spark prefixes the proxy base
 * and the reverse proxy's path), with its JSON at `/rockstate/api/`.
 */
final class RockstateTab(ui: SparkUI, entries: UiEntries) extends SparkUITab(ui, "rockstate") {
  override val name = "rockstate"

  def attach(): Unit = {
    attachPage(new RockstatePage(this, entries))
    ui.attachTab(this)
    // WebUI.attachHandler(contextPath, servlet, pathSpec), the same on every Spark line; by
    // reflection because its overload names Jetty's unshaded classes, which Spark relocates.
    classOf[SparkUI].getMethod("attachHandler", classOf[String], classOf[HttpServlet],
      classOf[String]).invoke(ui, ui.getBasePath + "/rockstate/api",
      new RockstateApiServlet(entries), "/*")
  }
}
