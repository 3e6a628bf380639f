"""What each provider writes in a partition's folder (``state/<op>/<partition>/``), and where
a rewrite moves what the query no longer reads: one definition for the rewrite, which moves
another provider's files aside, and the history, which lists what holds older state.
"""

from __future__ import annotations

import re

# Spark's providers: numbered snapshots, changelogs and deltas (and their checksums), the
# number being the state version; Spark's RocksDB provider's shared SSTs and its logs.
SPARK_FILE = re.compile(r"^\.?(\d+)(_[0-9a-f-]+)?\.(zip|changelog|delta|snapshot)(\.crc)?$")
SPARK_DIRS = frozenset({"SSTs", "logs"})
# rockstate's store folders (docs/checkpoint-format.md, "Layout").
ROCKSTATE_DIRS = frozenset({"versions", "manifests", "snapshots", "sst", "meta", "changelog"})
# ``state/<op>/_retired/``: partition folders and files a rewrite moved aside.
RETIRED = "_retired"
