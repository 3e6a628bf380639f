package org.apache.spark.ui.rockstate

/** One named number (a list of these stores as is; a map of longs does not, in Jackson). */
final case class NamedFigure(name: String, value: Long)
