package io.rockstate.storage.format

/** A checkpoint file that is missing, truncated or fails its checksum. Never read as empty. */
class CorruptCheckpointException(message: String, cause: Throwable = null)
  extends java.io.IOException(message, cause)
