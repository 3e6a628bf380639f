package io.rockstate.storage

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.{RockstateConf, Setting}

/**
 * Each setting is declared once (`RockstateConf`: key, default, values, doc), and
 * docs/configuration.md's tables say the same: every declared setting is documented with its
 * default, and every documented one is declared.
 */
class SettingsDocSuite extends AnyFunSuite {
  private val doc: Seq[String] = {
    Files.readAllLines(TestFixtures.inRepo("docs/configuration.md").toPath).asScala.toSeq
  }

  /** The rows of the table whose header row starts with `header`: its cells, trimmed. */
  private def table(header: String): Seq[Seq[String]] = doc
    .dropWhile(!_.startsWith(header)).drop(2).takeWhile(_.startsWith("|"))
    .map(_.split("\\|").toSeq.drop(1).map(_.trim))

  private def unquoted(cell: String) = cell.stripPrefix("`").stripSuffix("`")

  private val own = RockstateConf.All.filter(_.key.startsWith(RockstateConf.Prefix))
  private val sparks = RockstateConf.All.filterNot(_.key.startsWith(RockstateConf.Prefix))

  test("every setting RockstateConf declares is in RockstateConf.All, and its default is valid") {
    val declared = RockstateConf.getClass.getMethods.toSeq
      .filter(m => m.getParameterCount == 0 && classOf[Setting[_]].isAssignableFrom(m.getReturnType))
      .map(_.invoke(RockstateConf).asInstanceOf[Setting[_]])
    assert(declared.map(_.key).toSet == RockstateConf.All.map(_.key).toSet)
    assert(RockstateConf.All.map(_.key).distinct.size == RockstateConf.All.size)
    RockstateConf.All.foreach(s => s.in(Map.empty)) // a default outside its own bounds fails
    assert(RockstateConf.All.forall(_.doc.nonEmpty))
  }

  test("the settings table lists rockstate's own settings, each with its declared default") {
    val rows = table("| setting | default |").map(r => unquoted(r(0)) -> unquoted(r(1))).toMap
    val declared = own.map(s => s.key.stripPrefix(RockstateConf.Prefix) -> s).toMap
    assert(rows.keySet == declared.keySet)
    val differ = declared.collect {
      // An empty default is described in words ("Spark's per-application directory").
      case (name, s) if s.default.nonEmpty && rows(name) != s.default =>
        s"$name: the docs say ${rows(name)}, the declaration ${s.default}"
    }
    assert(differ.isEmpty)
  }

  test("Spark's own settings rockstate reads are in the Spark table with their defaults") {
    val Default = """\((?:rockstate's )?default:? `?([^`;,)]+)`?""".r
    val rows = table("| Spark setting |").map(_.head)
    sparks.foreach { s =>
      val row = rows.find(_.startsWith(s"`${s.key}`"))
      assert(row.isDefined, s"${s.key} is not in docs/configuration.md's Spark table")
      assert(Default.findFirstMatchIn(row.get).map(_.group(1).trim).contains(s.default), row.get)
    }
  }

  test("every old name a setting answers to is in the table of old names, beside its new one") {
    val rows = table("| old name | name now |").map(r => unquoted(r(0)) -> unquoted(r(1))).toMap
    val declared = own.flatMap(s => s.deprecatedKeys.map(old =>
      old.stripPrefix(RockstateConf.Prefix) -> s.key.stripPrefix(RockstateConf.Prefix))).toMap
    assert(rows == declared)
  }
}
