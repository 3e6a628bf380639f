"""Where the installed package keeps its jar, and the checks that it fits the running pyspark."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rockstate.build import BUILD_INFO, JAR_NAME
from rockstate.errors import RockstateSetupError

JARS_DIR = Path(__file__).resolve().parent / "jars"


def jar_path() -> Path:
    """The shim jar of this installation, checked against the installed pyspark.

    ``ROCKSTATE_JAR`` points at another build of the same shim instead (for example the one
    ``dev/sbt shim/package`` writes to ``jvm-shim/target/rockstate-shim.jar``).
    """
    override = os.environ.get("ROCKSTATE_JAR")
    if override:
        if not Path(override).is_file():
            raise RockstateSetupError(
                f"rockstate: ROCKSTATE_JAR={override} is not a file; build it "
                "(`dev/sbt shim/package`) or unset ROCKSTATE_JAR."
            )
        return Path(override).resolve()
    jar = JARS_DIR / JAR_NAME
    info_file = JARS_DIR / BUILD_INFO
    if not jar.is_file() or not info_file.is_file():
        raise RockstateSetupError(
            f"rockstate: the JVM shim jar is missing ({jar}); build it with "
            "`python -m rockstate.build` (needs Java 17+) or reinstall rockstate."
        )
    built_for = json.loads(info_file.read_text())["pyspark_version"]
    import pyspark

    if pyspark.__version__ != built_for:
        raise RockstateSetupError(
            f"rockstate: the jar was built for pyspark {built_for} but pyspark "
            f"{pyspark.__version__} is installed; run `python -m rockstate.build` or "
            f"`pip install 'pyspark=={built_for}'`."
        )
    return jar
