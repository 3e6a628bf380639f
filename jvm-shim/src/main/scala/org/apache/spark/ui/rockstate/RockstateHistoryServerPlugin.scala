package org.apache.spark.ui.rockstate

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.SparkListener
import org.apache.spark.status.{AppHistoryServerPlugin, ElementTrackingStore}
import org.apache.spark.ui.SparkUI

/**
 * The rockstate tab in Spark's History Server: the same listener rebuilds the entries from the
 * event log, and the tab is added to applications that have any. The History Server needs
 * rockstate's jar on its classpath (SPARK_DAEMON_CLASSPATH; docs/observability.md).
 */
final class RockstateHistoryServerPlugin extends AppHistoryServerPlugin {
  override def createListeners(conf: SparkConf,
      store: ElementTrackingStore): Seq[SparkListener] = Seq(new RockstateUiListener(store, conf))

  override def setupUI(ui: SparkUI): Unit = {
    val entries = new UiEntries(ui.store.store)
    if (entries.nonEmpty) new RockstateTab(ui, entries).attach()
  }
}
