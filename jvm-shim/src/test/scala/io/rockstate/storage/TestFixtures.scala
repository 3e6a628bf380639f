package io.rockstate.storage

import java.io.File

/** The golden fixtures both test suites read (`tests/fixtures`), found above the working dir. */
object TestFixtures {
  /** `tests/fixtures/<name>`; an error when no folder above the working dir holds it. */
  def dir(name: String): File = Iterator.iterate(new File(".").getAbsoluteFile)(_.getParentFile)
    .takeWhile(_ != null)
    .map(d => new File(d, s"tests/fixtures/$name"))
    .find(_.isDirectory)
    .getOrElse(sys.error(s"tests/fixtures/$name not found above the working dir"))

  /** A file of the repository (`docs/configuration.md`): the folder holding tests/fixtures. */
  def inRepo(path: String): File =
    new File(dir(".").getCanonicalFile.getParentFile.getParentFile, path)
}
