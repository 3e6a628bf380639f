#!/usr/bin/env bash
# Extracts PySpark's own transformWithState(InPandas) tests from an apache/spark git
# directory (any clone or mirror that has master history up to Nov 2025) into spark-4.0/ and
# spark-4.1/ beside this script.  Usage: bash fetch.sh /path/to/spark/.git
#
# No branch-4.0 / branch-4.1 ref was reachable when this was written, so each line takes
# master at the point its test files last matched the line:
#   4.0: 335063fc8f888654f6246f667973f4376bff9241 (2025-04-18, SPARK-51758), the last master
#        version of the single-file suite before SPARK-51814 (the Row `transformWithState`
#        API, 4.1-only) rewrote it. branch-4.0 was cut on 2025-01-15; the TWS fixes between
#        the cut and this commit were backported to 4.0 (checked against the 4.0.5 wheel's
#        python/pyspark/sql/streaming sources), so this is close to branch-4.0's file.
#   4.1: 477e6e890e2d4253b0316a9d74ae6137235263f4 (2025-11-02), the parent of SPARK-54133
#        "Setting version to 4.2.0-SNAPSHOT", i.e. where branch-4.1 was cut. The 4.1.4
#        wheel's TWS Python sources differ from it by a few backports only.
set -euo pipefail
git_dir=${1:?usage: fetch.sh SPARK_GIT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
get() {  # get COMMIT DEST PATH...
  local commit=$1 dest=$2; shift 2
  mkdir -p "$dest"
  for p in "$@"; do git --git-dir="$git_dir" show "$commit:$p" >"$dest/$(basename "$p")"; done
  echo "$commit" >"$dest/COMMIT"
}
get 335063fc8f888654f6246f667973f4376bff9241 "$here/spark-4.0" \
  python/pyspark/sql/tests/pandas/test_pandas_transform_with_state.py
c41=477e6e890e2d4253b0316a9d74ae6137235263f4
get $c41 "$here/spark-4.1" python/pyspark/sql/tests/pandas/helper/helper_pandas_transform_with_state.py \
  $(git --git-dir="$git_dir" ls-tree --name-only $c41 python/pyspark/sql/tests/pandas/streaming/ | grep '/test_')
