"""What a ``local-cluster`` application leaves in Spark's home, and its removal.

Spark's ``local-cluster[W,C,M]`` master runs its workers inside the driver's JVM with
``$SPARK_HOME/work`` as their work folder (outside Spark's own tests), and each executor copies
the application's jars and writes its logs to ``work/<application id>/<executor id>``. Nothing
removes them: a pip-installed pyspark's folder grows by the jars of every run (tens of MB
each, more with S3's SDK). A standalone worker started with its own ``--work-dir`` is not
affected.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def application_work_folder(spark) -> Path | None:
    """The running application's work folder, or None when its master is not local-cluster."""
    sc = spark.sparkContext
    if not sc.master.startswith("local-cluster"):
        return None
    # The workers resolve it from the JVM's SPARK_HOME (pyspark sets it), else its working folder.
    home = sc._jvm.java.lang.System.getenv("SPARK_HOME") or "."
    return Path(home) / "work" / sc.applicationId


def stop(spark) -> None:
    """Stops ``spark``, then removes its local-cluster work folder (its executors are gone)."""
    folder = application_work_folder(spark)
    spark.stop()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
