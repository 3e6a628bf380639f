package io.rockstate.storage.conf

/**
 * One setting, declared once (Flink's `ConfigOption`): its key, its default, the values it
 * takes and what it does. `RockstateConf` reads each through its declaration, and a test holds
 * docs/configuration.md's tables to the declarations (names and defaults).
 *
 * A value that does not parse or is out of bounds fails with the key named, what it must be and
 * the default, so the message says how to fix it.
 */
final case class Setting[T](key: String, default: String, kind: SettingKind[T], doc: String) {
  /** Its value in `confs`, else its default. */
  def in(confs: Map[String, String]): T = {
    val raw = confs.getOrElse(key, default).trim
    kind.parse(raw).fold(
      must => throw new IllegalArgumentException(s"rockstate: $key must be $must, got " +
        s"'$raw'; fix the setting or remove it to use the default $default."),
      identity)
  }

  /** Whether `confs` sets it. */
  def isSet(confs: Map[String, String]): Boolean = confs.contains(key)

  /** The key: a setting reads as its key in messages. */
  override def toString: String = key
}
