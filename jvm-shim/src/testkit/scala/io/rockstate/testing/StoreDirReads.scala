package io.rockstate.testing

import java.io.File

import io.rockstate.storage.format.{VersionFile, VersionManifest}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * Reads of a store's checkpoint directory that only audits and tests make (stores read through
 * their local files): `import StoreDirReads._` and a directory answers them.
 */
object StoreDirReads {
  implicit final class Reads(private val dir: StoreCheckpointDir) extends AnyVal {
    /** Committed versions (version files and manifests present), in ascending order. */
    def listVersions(): Seq[Long] = dir.listVersionEntries().map(_.version).distinct

    /** The landed attempt of a version's manifest, its version file downloaded and checked. */
    def readVersionManifest(version: Long): VersionManifest = {
      val entry = dir.findVersion(version).getOrElse(throw dir.missingVersion(version))
      if (entry.isManifest) dir.readManifest(version)
      else {
        val tmp = File.createTempFile("rockstate-version", ".rsv")
        try {
          val (size, crc) = dir.downloadSelfChecked(entry.path, entry.length, s"version $version",
            tmp)
          VersionFile.read(tmp, entry.path, dir.resolve(entry.path).toString, size, crc).manifest
        } finally tmp.delete()
      }
    }
  }
}
