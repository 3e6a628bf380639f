package org.apache.spark.ui.rockstate

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.SparkListenerEvent

/** The rockstate tab in a running application, and how rockstate's events reach its bus. */
object RockstateUi {
  /**
   * Keeps the tab's entries from now on and adds the tab, if the application has a UI (with
   * `spark.ui.enabled=false` there is no tab, and nothing else changes: the event log still
   * gets the events).
   */
  def attach(sc: SparkContext): Unit = sc.ui.foreach { ui =>
    val store = sc.statusStore.store
    sc.listenerBus.addToStatusQueue(new RockstateUiListener(store, sc.conf))
    new RockstateTab(ui, new UiEntries(store)).attach()
  }

  /** Posts to the application's listener bus (the event log, the tab, any listener). */
  def post(sc: SparkContext)(event: SparkListenerEvent): Unit = sc.listenerBus.post(event)
}
