package io.rockstate.testing

/**
 * One injected fault: when the `nth` operation `op` ("create", "rename", "delete", "open")
 * on a path matching `pathRegex` happens in a process `process` matches ("executor",
 * "driver" or "any"), do `action` `when` ("before" the operation, or "after" it: for create,
 * when the file is closed; for rename, once the target is in place): "halt" the JVM (a
 * SIGKILL at an exact point), "pause:<ms>", or "fail" (an IOException, once). `every`: on
 * every matching operation, not only the `nth` (a slow store: each upload takes `pause` longer);
 * `thread`, when set, a regex the current thread's name must match (`rockstate-snapshot-upload`:
 * background uploads only, not a snapshot the task takes on the commit path).
 */
final case class FaultRule(op: String, pathRegex: String, when: String, action: String,
    nth: Int, process: String, id: String = "", every: Boolean = false, thread: String = "") {
  private val pattern = pathRegex.r.pattern
  private val threads = Option(thread).filter(_.nonEmpty).map(_.r.pattern)
  def matches(o: String, path: String, w: String): Boolean =
    op == o && when == w && pattern.matcher(path).find() &&
      threads.forall(_.matcher(Thread.currentThread.getName).find())
}

object FaultRule {
  /** Every background snapshot upload (its files and its manifest) takes `ms` longer. */
  def slowUploads(ms: Long): FaultRule = FaultRule("create", UploadedFiles, "before",
    s"pause:$ms", 1, "any", every = true, thread = "rockstate-snapshot-upload")

  /** Cleanup pauses `ms` after each version file it expires. */
  def slowCleanup(ms: Long): FaultRule =
    FaultRule("delete", "/versions/", "after", s"pause:$ms", 1, "any", every = true)

  /** What a snapshot uploads: SST files and packs, snapshot manifests, format 2 meta files. */
  val UploadedFiles = "/(sst|snapshots|meta)/"
}
