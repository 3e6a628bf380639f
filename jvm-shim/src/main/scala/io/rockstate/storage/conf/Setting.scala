package io.rockstate.storage.conf

/**
 * One setting, declared once (Flink's `ConfigOption`): its key, its default, the values it
 * takes and what it does, and the keys it had before (`deprecatedKeys`, Flink's deprecated
 * keys), which still work and say once that they are old. `RockstateConf` reads each through
 * its declaration, and a test holds docs/configuration.md's tables to the declarations (names,
 * defaults and old names).
 *
 * A value that does not parse or is out of bounds fails with the key named, what it must be and
 * the default, so the message says how to fix it.
 */
final case class Setting[T](key: String, default: String, kind: SettingKind[T], doc: String,
    deprecatedKeys: Seq[String] = Nil) {
  /** Its value in `confs` (under its key, else an old one), else its default. */
  def in(confs: Map[String, String]): T = {
    val (from, raw) = lookup(confs).getOrElse((key, default))
    kind.parse(raw.trim).fold(
      must => throw new IllegalArgumentException(s"rockstate: $from must be $must, got " +
        s"'${raw.trim}'; fix the setting or remove it to use the default $default."),
      identity)
  }

  /** Whether `confs` sets it, under its key or an old one. */
  def isSet(confs: Map[String, String]): Boolean = lookup(confs).isDefined

  /** Every key it answers to: its own, then its old ones. */
  def keys: Seq[String] = key +: deprecatedKeys

  /** The key and value `confs` sets it with: its own key first; an old one warns once. */
  private def lookup(confs: Map[String, String]): Option[(String, String)] =
    confs.get(key).map(key -> _).orElse {
      deprecatedKeys.collectFirst { case old if confs.contains(old) =>
        DeprecatedKeys.warnOnce(old, key)
        old -> confs(old)
      }
    }

  /** The key: a setting reads as its key in messages. */
  override def toString: String = key
}
