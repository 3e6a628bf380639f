package io.rockstate.storage

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.local.{LocalRocksDB, NativeHeapTrim}

class NativeHeapTrimSuite extends AnyFunSuite {

  /** A trimmer whose trims run when `runDue` is called, on a clock the test moves. */
  private final class Fixture(output: Option[String]) {
    var nowMs = 0L
    var trimsAsked = 0
    val queued = scala.collection.mutable.Buffer.empty[(Runnable, Long)]
    val trimmer = new NativeHeapTrim(() => { trimsAsked += 1; output }, 1000,
      (r, delayMs) => queued += ((r, delayMs)), () => nowMs * 1000000)
    def runDue(): Unit = {
      val due = queued.toList
      queued.clear()
      due.foreach(_._1.run())
    }
  }

  private val Trimmed = Some("Trim native heap: RSS+Swap: 1178M->1155M (-23500K)")

  test("closes ask for one trim at a time, at most one a second") {
    val f = new Fixture(Trimmed)
    (1 to 5).foreach(_ => f.trimmer.afterClose())
    assert(f.queued.map(_._2) == Seq(0L)) // the first at once, the rest folded into it
    f.nowMs = 300
    f.runDue()
    assert(f.trimsAsked == 1 && f.trimmer.trims == 1)
    f.nowMs = 500 // 200 ms after the trim: the next waits out the second
    f.trimmer.afterClose()
    f.trimmer.afterClose()
    assert(f.queued.map(_._2) == Seq(800L))
    f.runDue()
    assert(f.trimsAsked == 2 && f.trimmer.trims == 2)
    f.runDue()
    assert(f.trimsAsked == 2, "no close since: no trim")
  }

  test("an allocator that cannot trim, or a JVM without the command, turns it off") {
    Seq(Some("Not available."), None).foreach { output =>
      val f = new Fixture(output)
      f.trimmer.afterClose()
      f.runDue()
      f.nowMs = 5000
      f.trimmer.afterClose()
      assert(f.queued.isEmpty && f.trimsAsked == 1 && f.trimmer.trims == 0, s"$output")
    }
  }

  test("closing an instance trims the executor's native heap (glibc, this JDK)") {
    val dir = Files.createTempDirectory("rockstate-trim").toFile
    try {
      val before = NativeHeapTrim.executor.trims
      val db = new LocalRocksDB(dir, RockstateConf.from(Map.empty, 2))
      db.put("k".getBytes, "v".getBytes)
      db.close()
      val deadline = System.nanoTime() + 30L * 1000000000
      while (NativeHeapTrim.executor.trims == before && System.nanoTime() < deadline) {
        Thread.sleep(20)
      }
      assert(NativeHeapTrim.executor.trims > before, NativeHeapTrim.diagnosticTrim())
    } finally FileUtils.deleteDirectory(dir)
  }
}
