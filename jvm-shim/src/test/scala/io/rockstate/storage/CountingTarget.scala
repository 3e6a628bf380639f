package io.rockstate.storage

import io.rockstate.storage.format.Changelog

/** A replay target that counts the records applied and keeps nothing. */
final class CountingTarget extends Changelog.Target {
  var records = 0L
  def put(key: Array[Byte], value: Array[Byte]): Unit = records += 1
  def merge(key: Array[Byte], value: Array[Byte]): Unit = records += 1
  def delete(key: Array[Byte]): Unit = records += 1
  def deleteRange(begin: Array[Byte], end: Array[Byte]): Unit = records += 1
}
