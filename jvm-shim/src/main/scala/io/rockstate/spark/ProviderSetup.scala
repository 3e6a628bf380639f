package io.rockstate.spark

import org.apache.hadoop.conf.Configuration

import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.retention.RetentionCleaner

/** Everything a provider's init() receives; set once, read by every store and maintenance run. */
private[spark] final case class ProviderSetup(
    id: StateStoreId,
    keySchema: StructType,
    valueSchema: StructType,
    defaultFamily: ColumnFamilySpec,
    useColumnFamilies: Boolean,
    storeConf: StateStoreConf,
    hadoopConf: Configuration,
    conf: RockstateConf,
    checkpointDir: StoreCheckpointDir,
    cleaner: RetentionCleaner,
    encoding: RowEncoding)
