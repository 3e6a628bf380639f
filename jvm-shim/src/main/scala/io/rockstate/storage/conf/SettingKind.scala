package io.rockstate.storage.conf

import java.util.Locale

/** The values a setting takes: each kind parses a string or says what it must be. */
sealed trait SettingKind[T] {
  /** The value, or what it must be (Left). */
  def parse(raw: String): Either[String, T]
}

object SettingKind {
  /** A whole number of at least `min`. */
  final case class Whole(min: Long) extends SettingKind[Long] {
    def parse(raw: String): Either[String, Long] = raw.toLongOption match {
      case Some(v) if v >= min => Right(v)
      case Some(_) => Left(s"at least $min")
      case None => Left(s"a whole number, at least $min")
    }
  }

  /** A whole number of at least `min`, held as an Int: larger values count as Int.MaxValue. */
  final case class Count(min: Int) extends SettingKind[Int] {
    def parse(raw: String): Either[String, Int] =
      Whole(min).parse(raw).map(v => math.min(v, Int.MaxValue.toLong).toInt)
  }

  /** A fraction from 0 up to, not including, 1. */
  case object Fraction extends SettingKind[Double] {
    def parse(raw: String): Either[String, Double] = raw.toDoubleOption match {
      case Some(v) if v >= 0.0 && v < 1.0 => Right(v)
      case _ => Left("a fraction from 0 up to (not including) 1")
    }
  }

  case object Flag extends SettingKind[Boolean] {
    def parse(raw: String): Either[String, Boolean] = raw.toLowerCase(Locale.ROOT) match {
      case "true" => Right(true)
      case "false" => Right(false)
      case _ => Left("true or false")
    }
  }

  /** One of `allowed`, in any case. */
  final case class OneOf(allowed: Set[String]) extends SettingKind[String] {
    def parse(raw: String): Either[String, String] = {
      val v = raw.toLowerCase(Locale.ROOT)
      if (allowed.contains(v)) Right(v)
      else Left(s"one of ${allowed.toSeq.sorted.mkString(", ")}")
    }
  }

  /** Any text (a path). */
  case object Text extends SettingKind[String] {
    def parse(raw: String): Either[String, String] = Right(raw)
  }
}
