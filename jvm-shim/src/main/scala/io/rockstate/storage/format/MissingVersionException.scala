package io.rockstate.storage.format

/**
 * A version with no version file (nor manifest) in the store: it was never written, or it was
 * removed. Readers of rockstate's own types see damage (a `CorruptCheckpointException`, never
 * empty state); Spark's adapter reports it as Spark's providers do, as a file that does not
 * exist (`expectedPath`: where its version file would be).
 */
class MissingVersionException(message: String, val version: Long, val expectedPath: String,
    cause: Throwable = null) extends CorruptCheckpointException(message, cause)
