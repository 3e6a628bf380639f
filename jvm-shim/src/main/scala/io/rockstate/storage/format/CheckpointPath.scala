package io.rockstate.storage.format

import java.io.File

import org.apache.hadoop.fs.Path

/**
 * The one containment rule for names read from checkpoint files (docs/guarantees.md, "Trust
 * model"; tests/fixtures/untrusted/rules.json pins it for the JVM and Python alike). A
 * checkpoint may come from a backup or another team: a manifest naming `../other-query/x`
 * would otherwise have retention delete that file, and a meta pack naming `/etc/x` would have
 * a load write it.
 *
 * A contained relative path is non-empty, not absolute, and split on `/` every component is
 * non-empty and neither `.` nor `..`; it has no `\` (a separator elsewhere), no `:` (a Hadoop
 * Path reads `file:` or `s3a:` as a scheme) and no control character (below 0x20, or 0x7f).
 */
object CheckpointPath {

  /** `path` if it is a contained relative path; else fails naming `where` it came from. */
  def relative(path: String, where: => String): String = {
    problem(path).foreach(why => throw refused(path, where, why))
    path
  }

  /** `name` if it is one contained component (a RocksDB file name): the rule, and no `/`. */
  def fileName(name: String, where: => String): String = {
    val why = problem(name).orElse(if (name.contains('/')) Some("it has a '/'") else None)
    why.foreach(w => throw refused(name, where, w))
    name
  }

  /** `relative` under `root`, after the rule and a check of the resolved path. */
  def within(root: Path, relative: String, where: => String): Path = {
    this.relative(relative, where)
    val resolved = new Path(root, relative)
    val (r, p) = (root.toUri, resolved.toUri)
    val base = Option(r.getPath).getOrElse("").stripSuffix("/")
    val inside = Option(p.getScheme) == Option(r.getScheme) &&
      Option(p.getAuthority) == Option(r.getAuthority) &&
      Option(p.getPath).exists(_.startsWith(base + "/"))
    if (!inside) throw refused(relative, where, s"it resolves to $resolved, outside $root")
    resolved
  }

  /** File `name` directly in `dir`, after the rule (one component) and a check of the result. */
  def localFile(dir: File, name: String, where: => String): File = {
    fileName(name, where)
    val base = dir.toPath.toAbsolutePath.normalize
    val resolved = base.resolve(name).normalize
    if (resolved.getParent != base) {
      throw refused(name, where, s"it resolves to $resolved, outside $base")
    }
    new File(dir, name)
  }

  /** Why `path` is not a contained relative path, if it is not. */
  private def problem(path: String): Option[String] =
    if (path == null || path.isEmpty) Some("it is empty")
    else if (path.startsWith("/")) Some("it is absolute")
    else if (path.exists(c => c < 0x20 || c == 0x7f)) Some("it has a control character")
    else if (path.contains('\\')) Some("it has a '\\'")
    else if (path.contains(':')) Some("it has a ':' (read as a scheme)")
    else path.split("/", -1).collectFirst {
      case "" => "it has an empty component"
      case "." => "it has a '.' component"
      case ".." => "it climbs out with '..'"
    }

  private def refused(path: String, where: String, why: String) = new CorruptCheckpointException(
    s"rockstate: $where names the path '${printable(path)}', which is refused ($why): every " +
      "path in a checkpoint stays inside its store directory. The checkpoint was altered or " +
      "comes from an untrusted source; restore it from a trusted copy.")

  /** The path with control characters escaped, so a message shows what was there. */
  private def printable(path: String): String =
    if (path == null) "null"
    else path.flatMap(c => if (c < 0x20 || c == 0x7f) f"\\u${c.toInt}%04x" else c.toString)
}
