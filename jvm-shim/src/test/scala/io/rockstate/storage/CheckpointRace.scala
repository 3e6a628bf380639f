package io.rockstate.storage

import java.io.File
import java.nio.file.Files
import java.util.concurrent.{CyclicBarrier, Executors, TimeUnit, TimeoutException}

import scala.util.{Random, Using}

import org.apache.commons.io.FileUtils
import org.rocksdb._

import io.rockstate.storage.local.{Elapsed, HardLinkCheckpoint}

/**
 * Races a checkpoint of a flushed, WAL-off RocksDB against the close of an iterator that
 * holds the last reference to the memtable the flush replaced: a task's iterator closing
 * while its commit's snapshot is taken. The close runs RocksDB's `FindObsoleteFiles`, which
 * finds nothing to delete. In rocksdbjni 9.8.4 (Spark 4.3's) it then brings its count of
 * pending purges back to zero without a signal (RocksDB PR 14069), and RocksDB's
 * `Checkpoint`, waiting inside `GetSortedWalFiles` for that count, sleeps until some other
 * background job signals: in an idle store, forever.
 *
 * `main` is the reproduction: `dev/sbt "shim/Test/runMain io.rockstate.storage.CheckpointRace
 * 10000"` counts the hung rounds of RocksDB's `Checkpoint` and of `HardLinkCheckpoint`.
 */
object CheckpointRace {

  /** Writes a checkpoint of `db` (whose directory is `dbDir`) to `target`, not there yet. */
  type CheckpointFn = (RocksDB, File, File) => Unit

  val rocksDBCheckpoint: CheckpointFn = (db, _, target) =>
    Using.resource(Checkpoint.create(db))(_.createCheckpoint(target.getAbsolutePath))

  val hardLinks: CheckpointFn = (db, dbDir, target) => HardLinkCheckpoint.write(db, dbDir, target)

  /**
   * Runs `rounds` races and returns how many checkpoints were still waiting `hangAfterMs`
   * after the iterator closed. Each hung one is freed by a flush (a background job ends by
   * signalling) before the next round. The checkpoint starts from 10 us before the close to
   * 40 us after it: where the two meet varies with the machine, so starts spread over that.
   */
  def hungRounds(rounds: Int, checkpoint: CheckpointFn, hangAfterMs: Long = 2000): Int = {
    RocksDB.loadLibrary()
    val root = Files.createTempDirectory("rockstate-race").toFile
    val dbDir = new File(root, "db")
    val pool = Executors.newFixedThreadPool(2)
    try {
      Using.resources(new Options().setCreateIfMissing(true),
          new WriteOptions().setDisableWAL(true),
          new FlushOptions().setWaitForFlush(true)) { (options, writes, flush) =>
        Using.resource(RocksDB.open(options, dbDir.getAbsolutePath)) { db =>
          val random = new Random(11)
          (0 until rounds).count { round =>
            // One key: each flush overlaps the last, so compactions keep the file count small.
            db.put(writes, "key".getBytes, Array.fill[Byte](64)(round.toByte))
            val iterator = db.newIterator()
            iterator.seekToFirst()
            db.flush(flush)
            val target = new File(root, s"checkpoint-$round")
            val start = new CyclicBarrier(2)
            val offsetNanos = random.nextInt(50000) - 10000 // the checkpoint's start - the close's
            val closed = pool.submit(task {
              start.await(); spin(-offsetNanos); iterator.close()
            })
            val made = pool.submit(task {
              start.await(); spin(offsetNanos); checkpoint(db, dbDir, target)
            })
            closed.get()
            val hung = try {
              made.get(hangAfterMs, TimeUnit.MILLISECONDS)
              false
            } catch {
              case _: TimeoutException =>
                db.put(writes, "wake".getBytes, Array[Byte](1))
                db.flush(flush)
                made.get(60, TimeUnit.SECONDS)
                true
            }
            FileUtils.deleteDirectory(target)
            hung
          }
        }
      }
    } finally {
      pool.shutdownNow()
      FileUtils.deleteDirectory(root)
    }
  }

  def main(args: Array[String]): Unit = {
    val rounds = args.headOption.fold(10000)(_.toInt)
    Seq("RocksDB's Checkpoint" -> rocksDBCheckpoint, "HardLinkCheckpoint" -> hardLinks).foreach {
      case (name, checkpoint) =>
        val started = System.nanoTime()
        val hung = hungRounds(rounds, checkpoint)
        println(s"$name: $hung of $rounds rounds hung (${Elapsed.sinceMs(started) / 1000} s)")
    }
  }

  private def task(body: => Unit): Runnable = () => body

  private def spin(nanos: Long): Unit = {
    val until = System.nanoTime() + nanos
    while (System.nanoTime() < until) {}
  }
}
