package io.rockstate.testing

/**
 * One injected fault: when the `nth` operation `op` ("create", "rename", "delete", "open")
 * on a path matching `pathRegex` happens in a process `process` matches ("executor",
 * "driver" or "any"), do `action` `when` ("before" the operation, or "after" it: for create,
 * when the file is closed; for rename, once the target is in place): "halt" the JVM (a
 * SIGKILL at an exact point), "pause:<ms>", or "fail" (an IOException, once).
 */
final case class FaultRule(op: String, pathRegex: String, when: String, action: String,
    nth: Int, process: String, id: String = "") {
  private val pattern = pathRegex.r.pattern
  def matches(o: String, path: String, w: String): Boolean =
    op == o && when == w && pattern.matcher(path).find()
}
