package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import org.apache.spark.util.kvstore.KVIndex

import io.rockstate.storage.ExecutorStoreFigures

/** An executor's stores as it last reported them. */
final case class ExecutorEntry(
    @(KVIndex @getter) executorId: String,
    figures: ExecutorStoreFigures)
