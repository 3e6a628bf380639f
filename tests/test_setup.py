"""The installed package, its jar, and the errors a user meets when a piece is missing."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rockstate
from rockstate.session import build, jar, spark_lines

REPO = Path(__file__).resolve().parent.parent


def test_installed_package_carries_a_jar_built_for_this_pyspark():
    import pyspark

    path = rockstate.jar_path()
    assert path.parent == jar.JARS_DIR, "the installed jar fits: nothing is built on first use"
    info = json.loads((path.parent / build.BUILD_INFO).read_text())
    assert info["pyspark_version"] == pyspark.__version__
    line = spark_lines.line_of(pyspark.__version__)
    assert info["spark_line"] == line
    assert jar.jar_line(path) == line
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert "io/rockstate/state/RockstateStateStoreProvider.class" in names
    assert "io/rockstate/plugin/RockstatePlugin.class" in names
    # The sources of every line travel with it, for a wheel installed next to another line.
    packaged = jar.PACKAGE_DIR / build.PACKAGED_SOURCES / "jvm-shim" / "src"
    for s in spark_lines.LINES:
        assert (packaged / f"spark-{s.line}" / "scala").is_dir(), s.line


def test_every_supported_line_has_an_adapter_folder_and_nothing_else_does():
    folders = {p.name for p in (REPO / "jvm-shim" / "src").glob("spark-*")}
    own = {f"spark-{s.line}" for s in spark_lines.LINES}
    shared = folders - own
    assert own <= folders
    # Every other folder is code shared from a supported line on ("spark-4.1+").
    assert {f.removesuffix("+") for f in shared} <= own, shared
    assert all(f.endswith("+") for f in shared), shared
    assert spark_lines.find("4.3").adapter_folders(folders) == [
        "spark-4.3", "spark-4.1+", "spark-4.2+"]
    assert spark_lines.find("4.0").adapter_folders(folders) == ["spark-4.0"]
    assert spark_lines.find("4.0.5").line == "4.0"
    assert spark_lines.find("3.5.1") is None
    assert spark_lines.find("4.4.0") is None


def test_the_users_jar_holds_no_test_code():
    """The fault-injecting file system, the store audit and the benches' floor provider live in
    the tests' own jar (tests/support/testkit_jar.py), compiled from jvm-shim/src/testkit: not
    in the jar users run."""
    with zipfile.ZipFile(rockstate.jar_path()) as z:
        names = z.namelist()
    assert any(n.startswith("io/rockstate/storage/") for n in names)
    assert [n for n in names if n.startswith(("io/rockstate/testing/", "io/rockstate/floor/"))
            or "StoreAudit" in n or "FaultInjecting" in n or "Floor" in n] == []
    from support.testkit_jar import testkit_jar
    with zipfile.ZipFile(testkit_jar()) as z:
        kit = set(z.namelist())
    assert {"io/rockstate/testing/FaultInjectingFileSystem.class",
            "io/rockstate/testing/StoreAudit.class",
            "io/rockstate/floor/FloorStateStoreProvider.class"} <= kit
    assert not any(n.startswith("io/rockstate/storage/") for n in kit)


def test_the_pyspark_pin_covers_exactly_the_supported_lines():
    """setup.cfg's pyspark range and the Spark-lines table say the same thing: a line added to
    the table without widening the pin (or the reverse) fails here."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    pins = [r.strip() for r in cfg["options"]["install_requires"].splitlines()
            if r.strip().startswith("pyspark")]
    assert pins == [spark_lines.pyspark_requirement()], pins
    assert spark_lines.pyspark_requirement() == "pyspark>=4.0,<4.4"
    # Every tested release falls inside the pin.
    for s in spark_lines.LINES:
        assert spark_lines.find(s.tested) is s


def test_missing_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.BuildError, match="Java was not found"):
        build.find_java()
    # configure() turns it into a setup error before pyspark fails obscurely
    from pyspark.sql import SparkSession

    with pytest.raises(rockstate.RockstateSetupError, match="Install Java 17"):
        rockstate.configure(SparkSession.builder)


def test_wrong_pyspark_version_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    fake = tmp_path / "site" / "pyspark"
    (fake / "jars").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text('__version__ = "3.5.1"\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "pyspark", raising=False)
    with pytest.raises(build.BuildError, match=r"pyspark 3\.5\.1 is installed.*pip install"):
        build.find_pyspark()


def _other_line(version: str) -> str:
    line = spark_lines.line_of(version)
    return next(s.tested for s in spark_lines.LINES if s.line != line)


def test_jar_built_for_another_line_is_refused_without_sources(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path):
    import pyspark

    other = _other_line(pyspark.__version__)
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / build.JAR_NAME).write_bytes(b"PK")
    (tmp_path / "jars" / build.BUILD_INFO).write_text(json.dumps({"pyspark_version": other}))
    monkeypatch.setattr(jar, "PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(jar, "JARS_DIR", tmp_path / "jars")
    with pytest.raises(rockstate.RockstateSetupError,
                       match=rf"built for pyspark {re.escape(other)} but pyspark "
                             rf"{re.escape(pyspark.__version__)} is installed.*--force-reinstall"):
        jar.jar_path()


def test_jar_for_another_line_is_built_once_on_first_use(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path, capsys):
    """A wheel built next to another Spark line: the packaged sources are compiled for the
    installed line on first use (with the pyspark wheel's Scala compiler), into the cache, and
    reused after."""
    import pyspark

    other = _other_line(pyspark.__version__)
    package = tmp_path / "package"
    (package / "jars").mkdir(parents=True)
    (package / "jars" / build.JAR_NAME).write_bytes(b"PK")
    (package / "jars" / build.BUILD_INFO).write_text(json.dumps({"pyspark_version": other}))
    shutil.copytree(REPO / "jvm-shim" / "src",
                    package / build.PACKAGED_SOURCES / "jvm-shim" / "src",
                    ignore=shutil.ignore_patterns("test"))
    monkeypatch.setattr(jar, "PACKAGE_DIR", package)
    monkeypatch.setattr(jar, "JARS_DIR", package / "jars")
    monkeypatch.setenv("ROCKSTATE_CACHE_DIR", str(tmp_path / "cache"))
    built = jar.jar_path()
    assert built.is_relative_to(tmp_path / "cache")
    assert jar.jar_line(built) == spark_lines.line_of(pyspark.__version__)
    # What build.build writes (pip's install runs the same build): the shared classes, the
    # line's adapter, the SQL functions' service entry, and the build info.
    with zipfile.ZipFile(built) as z:
        names = set(z.namelist())
        services = z.read("META-INF/services/org.apache.spark.sql.SparkSessionExtensionsProvider")
    assert {"io/rockstate/state/RockstateStateStoreProvider.class",
            "io/rockstate/spark/line/LineStateStore.class"} <= names
    assert services.decode().strip() == "io.rockstate.spark.RockstateExtensions"
    assert json.loads((built.parent / build.BUILD_INFO).read_text())["scala"] == "2.13"
    assert f"compiling the jar for pyspark {pyspark.__version__} once" in capsys.readouterr().err
    again = jar.jar_path()
    assert again == built
    assert "compiling" not in capsys.readouterr().err


def test_rockstate_jar_for_another_line_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path):
    import pyspark

    other = spark_lines.line_of(_other_line(pyspark.__version__))
    fake = tmp_path / "other.jar"
    with zipfile.ZipFile(fake, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", build.manifest(other, other + ".0"))
    monkeypatch.setenv("ROCKSTATE_JAR", str(fake))
    with pytest.raises(rockstate.RockstateSetupError,
                       match=rf"built for Spark {re.escape(other)} but pyspark"):
        jar.jar_path()


def test_the_build_compiles_the_installed_sources_not_the_working_directorys(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``python -m rockstate.session.build`` (what the missing-jar error suggests) writes into
    the package's jars/, which every session loads: run from a folder holding a planted
    ``jvm-shim/``, it compiles the installed package's own sources, and a folder's sources only
    when named with ``--sources``."""
    # An installed package: rockstate/session/build.py beside rockstate/jvm-src/.
    site = tmp_path / "site-packages"
    session = site / "rockstate" / "session"
    session.mkdir(parents=True)
    for name in ("build.py", "spark_lines.py"):
        shutil.copy(Path(build.__file__).parent / name, session / name)
    shutil.copytree(REPO / "jvm-shim" / "src" / "main",
                    site / "rockstate" / build.PACKAGED_SOURCES / "jvm-shim" / "src" / "main")
    spec = importlib.util.spec_from_file_location("installed_build", session / "build.py")
    installed = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "installed_build", installed)  # its dataclasses need it
    spec.loader.exec_module(installed)
    compiled: list[list[Path]] = []
    monkeypatch.setattr(installed, "toolchain", lambda: build.Toolchain(
        "java", "4.3.0", "4.3", tmp_path, ()))
    monkeypatch.setattr(installed, "line_sources", lambda root, line: [
        root / "jvm-shim" / "src" / "main" / "scala"])
    monkeypatch.setattr(installed, "compile_jar", lambda files, jar, *a, **k: (
        compiled.append(files), jar)[1])
    planted = tmp_path / "downloads"
    (planted / "jvm-shim" / "src" / "main" / "scala").mkdir(parents=True)
    (planted / "jvm-shim" / "src" / "main" / "scala" / "Planted.scala").write_text(
        "object Planted")
    monkeypatch.chdir(planted)

    assert installed.main(["--out", str(tmp_path / "jars")]) == 0
    own = site / "rockstate" / build.PACKAGED_SOURCES
    assert compiled[-1] and all(f.is_relative_to(own) for f in compiled[-1])
    assert installed.main(["--out", str(tmp_path / "jars"), "--sources", str(planted)]) == 0
    assert [f.name for f in compiled[-1]] == ["Planted.scala"]
    assert installed.main(["--out", str(tmp_path / "jars"), "--sources", str(tmp_path)]) == 2


def test_missing_jar_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(jar, "PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(jar, "JARS_DIR", tmp_path)
    with pytest.raises(rockstate.RockstateSetupError, match=r"python -m rockstate\.session\.build"):
        jar.jar_path()


def test_cli_reports_setup_errors_in_one_line(tmp_path: Path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "none"),
           "PATH": os.path.dirname(sys.executable)}
    out = subprocess.run([sys.executable, "-m", "rockstate", "build", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "Java was not found" in out.stderr


def test_configure_sets_provider_plugin_and_jar():
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.config("spark.plugins", "com.example.Other")
    rockstate.configure(builder, rocksdbMemoryMB=64, trackTotalNumberOfRows=False)
    opts = builder._options
    assert opts["spark.sql.streaming.stateStore.providerClass"] == rockstate.PROVIDER_CLASS
    assert opts["spark.plugins"] == f"com.example.Other,{rockstate.PLUGIN_CLASS}"
    assert opts["spark.jars"].endswith("rockstate-shim.jar")
    assert opts["spark.sql.streaming.stateStore.rockstate.rocksdbMemoryMB"] == "64"
    assert opts["spark.sql.streaming.stateStore.rockstate.trackTotalNumberOfRows"] == "false"


def test_spark_defaults_snippet_in_conf_matches_configure():
    snippet = (REPO / "conf" / "spark-defaults.conf").read_text()
    for line in rockstate.spark_defaults().splitlines():
        key, value = line.split(None, 1)
        if key == "spark.jars":
            continue  # an installation path; the snippet explains how to get it
        assert f"{key} {value}" in " ".join(snippet.split()), key


def test_rockstate_jar_override_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("ROCKSTATE_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(rockstate.RockstateSetupError, match="ROCKSTATE_JAR"):
        jar.jar_path()
    import pyspark

    line = spark_lines.line_of(pyspark.__version__)
    with zipfile.ZipFile(tmp_path / "built.jar", "w") as z:
        z.writestr("META-INF/MANIFEST.MF", build.manifest(line, pyspark.__version__))
    monkeypatch.setenv("ROCKSTATE_JAR", str(tmp_path / "built.jar"))
    assert jar.jar_path() == (tmp_path / "built.jar").resolve()


# Spark's internal packages (org.apache.spark.ui.rockstate is rockstate's own adapter).
SPARK_INTERNALS = re.compile(r"^import org\.apache\.spark\.(sql\.(execution|catalyst)"
                             r"|ui(?!\.rockstate)|status|util\.kvstore)\b", re.M)
ROCKSTATE_IMPORT = re.compile(r"^import io\.rockstate\.(\w+)", re.M)


def _jvm_sources() -> dict[str, list[Path]]:
    """Scala sources by package folder (io/rockstate/<package>), shared and per-line."""
    by_package: dict[str, list[Path]] = {}
    src = REPO / "jvm-shim" / "src"
    for root in [src / "main" / "scala", *sorted(src.glob("spark-*/scala")),
                 src / "testkit" / "scala"]:
        for f in root.rglob("*.scala"):
            rel = f.relative_to(root).parts
            package = rel[2] if rel[:2] == ("io", "rockstate") and len(rel) > 3 else "/".join(
                rel[:-1])
            by_package.setdefault(package, []).append(f)
    return by_package


def test_only_the_adapter_package_touches_sparks_internal_classes():
    """Storage, snapshots, retention and the coordinator see only rockstate's own types: Spark's
    internal state, UI and status classes are imported by the adapter (`io.rockstate.spark`,
    its per-line folders, the provider's public name in `io.rockstate.state`, and the tab in
    `org.apache.spark.ui.rockstate`) only."""
    adapter = {"spark", "state", "org/apache/spark/sql/execution/streaming/state",
               # The rockstate tab in Spark's UI and History Server.
               "org/apache/spark/ui/rockstate",
               # The benches' floor (test kit only): a StateStoreProvider of its own.
               "floor"}
    offenders = sorted(str(f.relative_to(REPO)) for package, files in _jvm_sources().items()
                       if package not in adapter for f in files
                       if SPARK_INTERNALS.search(f.read_text()))
    assert offenders == []
    for folder in (REPO / "jvm-shim" / "src").glob("spark-*"):
        packages = {p.parts[-2] for p in folder.rglob("*.scala")}
        assert packages and packages <= {"line", "state"}, folder.name


def _dependency_order(graph: dict[str, set[str]]) -> list[str]:
    """The nodes of an import graph, each after everything it imports; an import cycle fails
    the test, naming it."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(node: str, path: tuple[str, ...]) -> None:
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", f"import cycle: {' -> '.join((*path, node))}"
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            visit(dep, (*path, node))
        state[node] = "done"
        order.append(node)

    for node in sorted(graph):
        visit(node, ())
    return order


def test_jvm_packages_have_no_import_cycles():
    sources = _jvm_sources()
    graph = {p: {m for f in files for m in ROCKSTATE_IMPORT.findall(f.read_text())} - {p}
             for p, files in sources.items() if "/" not in p}
    order = _dependency_order(graph)
    assert order.index("storage") < order.index("checkpoint") < order.index("spark") < \
        order.index("state")
    # The SQL functions answer from the driver plugin's coordinator.
    assert order.index("checkpoint") < order.index("plugin") < order.index("spark")
    # The test kit builds on the store; nothing the user's jar holds imports it.
    assert not any("testing" in graph[p] for p in graph if p != "testing"), graph


# io.rockstate.storage by concern, lowest first: each subpackage imports only from the ones
# before it; the package's own top (the versioned store, "") comes last.
STORAGE_LAYERS = ["format", "location", "conf", "local", "snapshot", "restore", "retention",
                  "loaded", ""]
STORAGE_IMPORT = re.compile(r"^\s*import io\.rockstate\.storage\.(?:(\w+)\.)?(?:[A-Z_{]|_)", re.M)


def _storage_imports() -> dict[str, dict[str, set[str]]]:
    """For each storage subpackage ("" for the top), the subpackages each file imports."""
    root = REPO / "jvm-shim" / "src" / "main" / "scala" / "io" / "rockstate" / "storage"
    found: dict[str, dict[str, set[str]]] = {}
    for f in sorted(root.rglob("*.scala")):
        sub = "" if f.parent == root else f.parent.name
        text = f.read_text()
        imported = {m.group(1) or "" for m in STORAGE_IMPORT.finditer(text)} - {sub}
        # A file of a subpackage that names the top's types without an import cannot compile;
        # one in the top sees them unimported, so its imports are the whole story.
        found.setdefault(sub, {})[f.name] = imported
    return found


def test_storage_subpackages_import_only_downwards():
    """Storage is split by concern (Flink's backend: snapshot/, restore/): the checkpoint's file
    formats, the location's I/O, settings, the executor's local RocksDB and files, the
    snapshot's synchronous and asynchronous parts, the restore, retention, and the versioned
    store on top. A subpackage imports only the ones below it."""
    found = _storage_imports()
    assert set(found) == set(STORAGE_LAYERS), sorted(found)
    upward = sorted(f"{sub or 'storage'}/{name} imports {dep or 'storage'}"
                    for sub, files in found.items() for name, deps in files.items()
                    for dep in deps
                    if STORAGE_LAYERS.index(dep) > STORAGE_LAYERS.index(sub))
    assert upward == []
    top = REPO / "jvm-shim" / "src" / "main" / "scala" / "io" / "rockstate" / "storage"
    # The top holds the versioned store and its figures, nothing a subpackage could take.
    assert len(list(top.glob("*.scala"))) <= 6


def _python_imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """The package modules a module imports when it runs: at its top and inside functions, but
    not under ``if TYPE_CHECKING:`` (annotations only). Modules are named by their dotted path
    in the package (``checkpoint.location``); ``from rockstate.checkpoint import X`` of a name
    that is no module means that subpackage's ``__init__`` (``checkpoint``), and of the package
    itself (``from rockstate import X``) the package's ``__init__``."""
    found: set[str] = set()

    def module_of(dotted: str) -> str:
        return dotted if dotted else "__init__"

    def walk(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                walk(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "rockstate":
                within = ".".join(parts[1:])
                for a in node.names:
                    name = f"{within}.{a.name}" if within else a.name
                    found.add(name if name in modules else module_of(within))
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "rockstate":
                    found.add(module_of(".".join(parts[1:])))
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(tree)
    return found


def _python_modules() -> dict[str, Path]:
    """Every module of the package by its dotted path in it; a subpackage's ``__init__`` by the
    subpackage's name, the package's own as ``__init__``."""
    package = REPO / "python" / "rockstate"
    found = {}
    for f in package.rglob("*.py"):
        parts = f.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        found[".".join(parts)] = f
    return found


# The package's layers, each importing only those before it: errors; the encodings of rows and
# entries; a checkpoint's files; session set-up (which reads no checkpoint); the live view;
# the offline tools; Nexmark (a workload and its runner); at the top the package's names, the
# CLI and the demo.
PYTHON_LAYERS = ("errors", "encoding", "checkpoint", "session", "live", "tools", "nexmark")


# Reference pages say what is true now, each figure with its command; every run goes to
# docs/history/. Each page's length is held here so that a run log cannot grow back into one
# unnoticed: a page that needs more room moves what is history to the log first.
REFERENCE_PAGE_LINES = 400
LONGER_PAGES = {"checkpoint-format.md": 600, "guarantees.md": 450}


def test_reference_pages_stay_within_their_size():
    pages = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
    over = [f"{p.name}: {n} lines, at most {LONGER_PAGES.get(p.name, REFERENCE_PAGE_LINES)}"
            for p in pages
            if (n := len(p.read_text().splitlines())) > LONGER_PAGES.get(p.name,
                                                                         REFERENCE_PAGE_LINES)]
    assert over == [], over


def test_the_project_cites_no_numbered_work_steps_or_tracker_issues():
    """The why belongs in the text, the history in commits and CHANGELOG.md."""
    pattern = re.compile(r"\b(?:[Ss]tops?|[Ii]ssues?) [0-9]+")
    found = [f"{p.relative_to(REPO)}:{i}" for folder in ("python", "jvm-shim", "docs", "tests",
                                                        "bench", "dev")
             for p in (REPO / folder).rglob("*")
             if p.is_file() and p.suffix in (".py", ".scala", ".md", ".sh", "") and
             not {"fixtures", "target"} & set(p.parts)
             for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
             if pattern.search(line)]
    assert found == [], found


def test_python_modules_have_no_import_cycles():
    """The Python twin of the JVM's test: no module imports, however late, one that imports
    it back, so each module can be read (and loaded) after the ones it builds on; and no
    subpackage imports one of a later layer, so the subpackages have no cycle either."""
    files = _python_modules()
    graph = {name: _python_imports(ast.parse(f.read_text()), set(files)) - {name}
             for name, f in files.items()}
    order = _dependency_order(graph)
    # Within the checkpoint layer: paths, the format, the checkpoint model, the location.
    assert order.index("errors") < order.index("checkpoint.format") < \
        order.index("checkpoint.model") < order.index("checkpoint.location") < \
        order.index("live.view") < order.index("live.notebook")
    top = {m.split(".")[0] for m in files} - set(PYTHON_LAYERS) - {"__init__", "__main__"}
    assert top == {"cli", "demo"}, f"modules outside the layers: {sorted(top)}"
    layer = {m: m.split(".")[0] for m in files}
    for module, deps in graph.items():
        mine = layer[module]
        if mine not in PYTHON_LAYERS:
            continue
        for dep in deps:
            theirs = layer[dep]
            assert theirs in PYTHON_LAYERS and \
                PYTHON_LAYERS.index(theirs) <= PYTHON_LAYERS.index(mine), \
                f"{module} (layer {mine}) imports {dep} (layer {theirs}): a layer imports only " \
                f"those before it, {' < '.join(PYTHON_LAYERS)}"
    # The session set-up reads no checkpoint, and the checkpoint's files reach no Spark session.
    reaching = sorted(f"{m} -> {d}" for m, ds in graph.items() if layer[m] == "session"
                      for d in ds if layer[d] == "checkpoint")
    assert not reaching, f"the session set-up reads a checkpoint: {reaching}"
    assert "__init__" not in {n for m, deps in graph.items() if m != "demo" for n in deps}
