"""Runs PySpark's own transformWithState(InPandas) tests on rockstate or on Spark's provider.

Usage (with the python of a venv that has pyspark and rockstate installed):

    $VENV/bin/python dev/pyspark-tws-suite/run.py rockstate
    $VENV/bin/python dev/pyspark-tws-suite/run.py spark
    .../python run.py rockstate --files test_pandas_transform_with_state.py -k "map_state"

The tests are the installed pyspark's own: the wheel does not install `pyspark.sql.tests`, but
it ships the whole Python tree of its release in `pyspark/python/lib/pyspark.zip` (what Spark's
Python workers import), tests included. The transformWithState test modules are extracted from
it to a temporary directory with their `pyspark.sql.tests.pandas.{helper,streaming}.` imports
made flat, and run with pytest. With `rockstate`, a conftest wraps every test
class's `conf()` so that the SparkContext starts with exactly what `rockstate.configure()` puts
on a builder (the jar in spark.jars, the plugin, the provider class); the tests' own setting
of Spark's RocksDBStateStoreProvider is overridden. With `spark` the tests run unmodified.
Per-test outcomes go to <out>/junit.xml and <out>/pytest.log; a summary is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

CONFTEST = '''
import os
from pyspark.testing.utils import ReusedPySparkTestCase

PROVIDER = os.environ["TWS_SUITE_PROVIDER"]


def pytest_collection_modifyitems(config, items):
    # ReusedSQLTestCase is imported into each module, so pytest collects its
    # test_assert_classic_mode there: not a transformWithState test.
    keep = [i for i in items if getattr(i, "cls", None) is None
            or i.cls.__name__ != "ReusedSQLTestCase"]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep

if PROVIDER == "rockstate":
    import rockstate
    from rockstate.session.configure import PLUGIN_CLASS, PROVIDER_CLASS, PROVIDER_KEY

    def _append(existing, item):
        parts = [p for p in (existing or "").split(",") if p]
        return ",".join(parts if item in parts else [*parts, item])

    def _with_rockstate(conf):
        # the same three settings rockstate.configure(builder) makes
        conf.set("spark.jars", _append(conf.get("spark.jars", None), str(rockstate.jar_path())))
        conf.set("spark.plugins", _append(conf.get("spark.plugins", None), PLUGIN_CLASS))
        conf.set(PROVIDER_KEY, PROVIDER_CLASS)
        return conf

    _orig_setup = ReusedPySparkTestCase.setUpClass.__func__

    def _setup(cls):
        own_conf = cls.conf  # bound to cls: the test class's own conf()
        cls.conf = classmethod(lambda c: _with_rockstate(own_conf()))
        _orig_setup(cls)
        used = cls.sc.getConf().get(PROVIDER_KEY)
        assert used == PROVIDER_CLASS, f"provider is {used}, not rockstate"

    ReusedPySparkTestCase.setUpClass = classmethod(_setup)
'''


# The transformWithState tests in the zip: 4.0 has one module, 4.1+ a helper and a folder.
TWS_TESTS = re.compile(
    r"pyspark/sql/tests/pandas/(test_pandas_transform_with_state\.py"
    r"|helper/helper_pandas_transform_with_state\.py"
    r"|streaming/test_(pandas_)?transform_with_state\w*\.py)$")


def tests_zip() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip"
    if not path.is_file():
        sys.exit(f"pyspark {pyspark.__version__} has no {path}: its tests cannot be found")
    return path


def prepare(work: Path) -> list[str]:
    """Writes the installed pyspark's transformWithState tests into `work`; their names."""
    names = []
    with zipfile.ZipFile(tests_zip()) as zf:
        for member in sorted(n for n in zf.namelist() if TWS_TESTS.search(n)):
            name = member.rsplit("/", 1)[1]
            text = re.sub(r"pyspark\.sql\.tests\.pandas\.(helper|streaming)\.", "",
                          zf.read(member).decode())
            (work / name).write_text(text)
            if name.startswith("test_"):
                names.append(name)
    if not names:
        sys.exit(f"no transformWithState tests in {tests_zip()}")
    (work / "conftest.py").write_text(CONFTEST)
    return names


def summarize(junit: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"passed": [], "failed": [], "error": [], "skipped": []}
    if not junit.exists():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
        kinds = {child.tag for child in case}
        kind = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        out[{"failure": "failed"}.get(kind, kind)].append(name)
    return out


def main() -> int:
    import pyspark

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("provider", choices=["rockstate", "spark"])
    ap.add_argument("--files", nargs="*", help="test file names (default: all of the line)")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--timeout", type=int, default=1500, help="seconds for the pytest run")
    ap.add_argument("--out", help="directory for junit.xml and pytest.log")
    args = ap.parse_args()

    line = ".".join(pyspark.__version__.split(".")[:2])
    out = Path(args.out or tempfile.mkdtemp(prefix=f"tws-{line}-{args.provider}-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tws-suite-"))
    try:
        found = prepare(work)  # every module: the tests import each other
        files = args.files or found
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
               f"--junitxml={out / 'junit.xml'}", *files]
        if args.keyword:
            cmd += ["-k", args.keyword]
        # Python workers must run this interpreter's pyspark, not a `python3` off PATH.
        env = {**os.environ, "TWS_SUITE_PROVIDER": args.provider,
               "PYSPARK_PYTHON": sys.executable}
        print(f"pyspark {pyspark.__version__}, provider {args.provider}, tests from {tests_zip()}")
        print(f"log: {out / 'pytest.log'}", flush=True)
        with open(out / "pytest.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                rc = proc.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # pytest and the JVM it started
                proc.wait()
                rc = "timeout"
        res = summarize(out / "junit.xml")
        print(f"pytest exit: {rc}")
        for kind, names in res.items():
            print(f"{kind}: {len(names)}")
            if kind != "passed":
                for n in names:
                    print(f"  {n}")
        return 0 if rc == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
