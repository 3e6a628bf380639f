package io.rockstate.storage

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.format.{CorruptCheckpointException, RowChecksum,
  RowChecksumMismatchException}
import io.rockstate.storage.local.RowChecksumSampler

/** The per-row checksum layout (`RowChecksum`), byte by byte, and its sampler. */
class RowChecksumSuite extends AnyFunSuite {
  private val delimiter: Byte = ','
  private def always = () => true

  test("a sealed value opens to itself, alone or merged, and its header is checksum and length") {
    val random = new Random(7)
    (1 to 200).foreach { _ =>
      val key = Array.fill(2 + random.nextInt(40))(random.nextInt(256).toByte)
      val parts = Seq.fill(1 + random.nextInt(3))(
        Array.fill(random.nextInt(60))(random.nextInt(256).toByte))
      // The family id (2 bytes) is not covered: another family's id opens the same value.
      val stored = RowChecksum.sealAll(key, 2, parts, delimiter)
      val other = Array[Byte](9, 9) ++ key.drop(2)
      val opened = RowChecksum.open(other, 2, stored, delimiter, always, "test")
      assert(opened.toSeq == parts.map(_.toSeq).reduce(_ ++ Seq(delimiter) ++ _))
    }
    val one = RowChecksum.seal("key".getBytes, 0, "value".getBytes)
    val header = java.nio.ByteBuffer.wrap(one).order(java.nio.ByteOrder.LITTLE_ENDIAN)
    val crc = new java.util.zip.CRC32C()
    crc.update("keyvalue".getBytes)
    assert(header.getInt == crc.getValue.toInt && header.getInt == 5)
    assert(new String(one.drop(RowChecksum.HeaderBytes)) == "value")
  }

  test("a changed byte fails the checksum; a bad length or a missing delimiter is damage") {
    val key = "k".getBytes
    val stored = RowChecksum.sealAll(key, 0, Seq("ab".getBytes, "cd".getBytes), delimiter)
    stored.indices.foreach { i => // every byte: checksums, lengths, values, the delimiter
      val bad = stored.clone()
      bad(i) = (bad(i) ^ 0x10).toByte
      val e = intercept[CorruptCheckpointException](
        RowChecksum.open(key, 0, bad, delimiter, always, "the test's family"))
      assert(e.getMessage.contains("the test's family"), i)
    }
    val e = intercept[RowChecksumMismatchException](
      RowChecksum.open("other".getBytes, 0, stored, delimiter, always, "test"))
    assert(e.expected != e.computed)
    // Lengths are checked whether or not the checksum is: a header is never trusted.
    val long = stored.clone()
    long(4) = 100
    intercept[CorruptCheckpointException](
      RowChecksum.open(key, 0, long, delimiter, () => false, "test"))
    intercept[CorruptCheckpointException](
      RowChecksum.open(key, 0, stored.take(5), delimiter, () => false, "test"))
  }

  test("the sampler checks every ratio-th read, none at 0") {
    val every3 = new RowChecksumSampler(3)
    assert((1 to 9).map(_ => every3.next()) == Seq(false, false, true, false, false, true,
      false, false, true))
    assert(every3.requested == 9 && every3.verified == 3)
    val none = new RowChecksumSampler(0)
    assert(!(1 to 5).exists(_ => none.next()))
    intercept[IllegalArgumentException](new RowChecksumSampler(-1))
  }
}
