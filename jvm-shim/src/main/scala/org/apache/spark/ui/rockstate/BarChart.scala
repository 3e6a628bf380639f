package org.apache.spark.ui.rockstate

import scala.xml.{Elem, Node, NodeSeq}

/**
 * A bar chart as inline SVG, drawn on the server: the tab needs no script, in the live UI and
 * in the History Server alike. Colours are the checkpoint report's. Series are drawn side by
 * side per label; every bar carries its value in a `<title>` (the browser's tooltip).
 */
object BarChart {
  final case class Series(name: String, colour: String, values: Seq[Long])

  private val Width = 560
  private val Height = 220
  private val Left = 64
  private val Bottom = 36
  private val Top = 28

  def apply(id: String, title: String, format: Long => String, labels: Seq[String],
      series: Seq[Series], colourOf: (Series, Int) => String = (s, _) => s.colour): Elem = {
    val plotW = Width - Left - 12
    val plotH = Height - Top - Bottom
    val top = math.max(1L, (for (s <- series; v <- s.values) yield v).maxOption.getOrElse(1L))
    val slot = if (labels.isEmpty) plotW.toDouble else plotW.toDouble / labels.size
    val barW = math.max(1.0, slot * 0.8 / math.max(1, series.size))
    val labelEvery = math.max(1, labels.size / 12)
    def y(v: Long): Double = Top + plotH - plotH * v.toDouble / top
    val bars = for {
      (s, si) <- series.zipWithIndex
      (v, i) <- s.values.zipWithIndex
      if v > 0
    } yield {
      val x = Left + slot * i + slot * 0.1 + barW * si
      <rect class="bar" x={f"$x%.1f"} y={f"${y(v)}%.1f"} width={f"$barW%.1f"}
            height={f"${Top + plotH - y(v)}%.1f"} fill={colourOf(s, i)}
            data-value={v.toString}><title>{s"${s.name} ${labels(i)}: ${format(v)}"}</title></rect>
    }
    val xLabels = labels.zipWithIndex.filter(_._2 % labelEvery == 0).map { case (l, i) =>
      <text x={f"${Left + slot * i + slot / 2}%.1f"} y={(Height - Bottom + 14).toString}
            text-anchor="middle" font-size="10">{l}</text>
    }
    val legend = series.zipWithIndex.map { case (s, i) =>
      <g><rect x={(Left + i * 150).toString} y={(Height - 12).toString} width="10" height="10"
               fill={s.colour}/><text x={(Left + i * 150 + 14).toString}
               y={(Height - 3).toString} font-size="11">{s.name}</text></g>
    }
    <svg class="rockstate-chart" id={id} xmlns="http://www.w3.org/2000/svg" width={Width.toString}
         height={Height.toString} viewBox={s"0 0 $Width $Height"} role="img" data-title={title}>
      <text x={Left.toString} y="16" font-size="13" font-weight="600">{title}</text>
      <line x1={Left.toString} y1={(Top + plotH).toString} x2={(Width - 12).toString}
            y2={(Top + plotH).toString} stroke="#9aa4b1"/>
      <text x={(Left - 6).toString} y={(Top + 4).toString} text-anchor="end"
            font-size="10">{format(top)}</text>
      <text x={(Left - 6).toString} y={(Top + plotH).toString} text-anchor="end"
            font-size="10">0</text>
      {NodeSeq.fromSeq(bars)}{NodeSeq.fromSeq(xLabels)}{NodeSeq.fromSeq(legend)}
    </svg>
  }

  def empty(title: String): Node = <p class="rockstate-no-chart">{title}: nothing yet</p>
}
