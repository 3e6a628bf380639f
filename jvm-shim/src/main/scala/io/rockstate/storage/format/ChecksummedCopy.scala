package io.rockstate.storage.format

import java.io.{InputStream, OutputStream}
import java.util.zip.CRC32

object ChecksummedCopy {
  /**
   * Copies `in` to `out`, adding every byte to `crc`; returns the bytes copied. The one loop
   * behind uploads, downloads, version files and cache checks (`OutputStream.nullOutputStream`
   * when only the checksum is wanted); at most `max` bytes.
   */
  def copy(in: InputStream, out: OutputStream, crc: CRC32, max: Long = Long.MaxValue): Long = {
    val buf = new Array[Byte](1 << 16)
    var total = 0L
    var n = 0
    while (total < max && { n = in.read(buf, 0, math.min(buf.length.toLong, max - total).toInt)
      n >= 0 }) {
      out.write(buf, 0, n)
      crc.update(buf, 0, n)
      total += n
    }
    total
  }
}
