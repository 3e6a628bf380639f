"""The one provider table (``rockstate.session.providers``): every name the benches, ``rockstate
nexmark``, the rewrite and the tests use stands for one class and its confs."""

from __future__ import annotations

import pytest

from rockstate.session import providers
from rockstate.session.providers import PROVIDERS, parse, resolve
from rockstate.tools.rewrite import TARGETS


def test_each_name_is_one_class_and_its_confs():
    assert PROVIDERS["spark-rocksdb"][0] == PROVIDERS["spark-rocksdb-changelog"][0] == \
        providers.SPARK_ROCKSDB_CLASS
    changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    assert PROVIDERS["spark-rocksdb"][1][changelog] == "false"
    assert PROVIDERS["spark-rocksdb-changelog"][1][changelog] == "true"
    # The rewrite writes a class; its targets are the table's names for them.
    assert {"rockstate": PROVIDERS["rockstate"][0],
                       "spark-rocksdb": providers.SPARK_ROCKSDB_CLASS} == TARGETS


def test_old_names_still_work_and_say_what_they_are_now():
    with pytest.warns(FutureWarning, match="'rocksdb' is deprecated; it is now "
                                           "'spark-rocksdb-changelog'"):
        assert parse("rockstate,rocksdb") == ["rockstate", "spark-rocksdb-changelog"]
    with pytest.warns(FutureWarning):
        assert resolve("hdfs") == "spark-hdfs"


def test_unknown_names_and_the_test_kits_provider_are_refused_where_they_cannot_run():
    with pytest.raises(ValueError, match="unknown provider spark-rockdb"):
        parse("rockstate,spark-rockdb")
    with pytest.raises(ValueError, match="unknown provider floor"):
        parse("floor")  # rockstate nexmark: the test kit's jar is not on its class path
    assert parse("floor", test_kit=True) == ["floor"]
