package io.rockstate.storage

import org.scalatest.funsuite.AnyFunSuite

import io.rockstate.storage.local.{IdleInstance, OpenInstances}

class OpenInstancesSuite extends AnyFunSuite {

  /** An instance that closes when asked unless `held`; records the order it closed in. */
  private final class Fake(name: String, registry: => OpenInstances,
      closedOrder: scala.collection.mutable.Buffer[String]) extends IdleInstance {
    var held = false
    var open = true
    override def closeIfIdle(unreleased: () => Boolean): Boolean =
      if (held || !open || !unreleased()) false
      else {
        open = false
        closedOrder += name
        registry.forget(this)
        true
      }
    override def toString: String = name
  }

  /** A registry whose passes run when `runPasses` is called (as its thread would, later). */
  private final class Fixture {
    val queued = scala.collection.mutable.Queue.empty[Runnable]
    val registry = new OpenInstances(r => queued.enqueue(r))
    val closed = scala.collection.mutable.Buffer.empty[String]
    def fake(name: String) = new Fake(name, registry, closed)
    def runPasses(): Unit = while (queued.nonEmpty) queued.dequeue().run()
  }

  test("past the cap the instances released longest ago close; none without a cap") {
    val f = new Fixture
    val Seq(a, b, c, d) = Seq("a", "b", "c", "d").map(f.fake)
    Seq(a, b, c, d).foreach(f.registry.released(_, 0))
    f.runPasses()
    assert(f.closed.isEmpty && f.registry.open == 4)
    f.registry.released(b, 2) // b is now the most recent: a and c are the oldest
    f.runPasses()
    assert(f.closed == Seq("a", "c") && f.registry.open == 2 && f.registry.closedForCap == 2)
  }

  test("a held instance stays open and closes at a later pass") {
    val f = new Fixture
    val Seq(a, b, c, d) = Seq("a", "b", "c", "d").map(f.fake)
    Seq(a, b, c).foreach(f.registry.released(_, 1))
    a.held = true // the oldest, but a task holds it
    f.runPasses()
    assert(f.closed == Seq("b", "c") && f.registry.open == 1)
    a.held = false
    f.registry.released(d, 1)
    f.runPasses()
    assert(f.closed == Seq("b", "c", "a") && f.registry.open == 1)
  }

  test("an instance released again while a pass had chosen it stays open") {
    val f = new Fixture
    val a = f.fake("a")
    val Seq(b, c) = Seq("b", "c").map(f.fake)
    // a's release lands between the pass choosing it and its close (under a's lock, in a store).
    val racing = new IdleInstance {
      override def closeIfIdle(unreleased: () => Boolean): Boolean = {
        f.registry.released(this, 2)
        if (unreleased()) { f.registry.forget(this); f.closed += "racing"; true } else false
      }
      override def toString = "racing"
    }
    Seq[IdleInstance](racing, a, b, c).foreach(f.registry.released(_, 2))
    f.runPasses()
    assert(f.closed == Seq("a", "b") && f.registry.open == 2)
  }
}
