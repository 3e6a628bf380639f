"""The suites' JVM test kit, compiled for the installed Spark line and kept out of the user's jar.

``jvm-shim/src/testkit/scala`` (the fault-injecting ``rsfault://`` file system, the store audit)
and the Scala transformWithState fixtures (``jvm-shim/src/test/scala/io/rockstate/tws``) are
compiled with the pyspark wheel's Scala compiler against Spark's jars and rockstate's jar, once
per content: the jar's name carries a hash of the sources, the rockstate jar and pyspark's
version, so the torture driver's processes and later runs reuse it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "jvm-shim" / "src"
SOURCES = (SRC / "testkit" / "scala", SRC / "test" / "scala" / "io" / "rockstate" / "tws")


def testkit_jar() -> Path:
    """The test kit jar for this environment's pyspark and rockstate jar (compiled on first
    use); it must be on the JVM's class path from the start (``spark.jars``)."""
    import pyspark

    import rockstate
    from rockstate.session import build

    files = sorted(p for d in SOURCES for p in d.rglob("*.scala"))
    shim = rockstate.jar_path()
    digest = hashlib.sha256(pyspark.__version__.encode())
    for f in [shim, *files]:
        digest.update(str(f).encode())
        digest.update(f.read_bytes())
    folder = Path(os.environ.get("ROCKSTATE_TESTKIT_DIR")
                  or Path(tempfile.gettempdir()) / "rockstate-testkit")
    jar = folder / f"rockstate-testkit-{digest.hexdigest()[:16]}.jar"
    if not jar.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole or not at all (compile_jar renames it into place).
        build.compile_jar(files, jar, "Manifest-Version: 1.0\nCreated-By: rockstate tests\n",
                          classpath=(shim,))
    return jar
