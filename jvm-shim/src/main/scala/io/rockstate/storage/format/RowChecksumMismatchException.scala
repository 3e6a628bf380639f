package io.rockstate.storage.format

/** A row whose value does not match the checksum stored with it (`RowChecksum`). */
class RowChecksumMismatchException(val expected: Int, val computed: Int, message: String)
  extends CorruptCheckpointException(message)
