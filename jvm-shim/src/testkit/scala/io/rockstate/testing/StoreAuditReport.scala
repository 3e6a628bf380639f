package io.rockstate.testing

/** What an audit of one store found. */
final case class StoreAuditReport(
    store: String,
    versions: Seq[Long],
    snapshots: Seq[String],
    loaded: Map[Long, Long], // version -> keys found by reading it back
    unreferenced: Seq[String], // data files no manifest references
    missing: Seq[String], // files a manifest references that are absent
    errors: Seq[String]) { // versions that failed to load, with the reason

  def ok: Boolean = unreferenced.isEmpty && missing.isEmpty && errors.isEmpty
}
