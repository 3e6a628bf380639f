"""Build rockstate's JVM shim with the Scala compiler that ships inside the pyspark wheel.

``python -m rockstate.session.build`` compiles the shared sources (``jvm-shim/src/main/scala``)
and the installed pyspark line's adapter (``jvm-shim/src/spark-<line>/scala``, see
``spark_lines``) against that pyspark's jars, and writes ``rockstate-shim.jar`` plus
``build-info.json`` (the pyspark version and line it was built for, also in the jar's manifest).
``pip install`` runs the same build through ``setup.py``, against the pyspark of the environment it
installs into. This module imports nothing beyond the standard library so that it also runs
inside pip's build environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


def _load_spark_lines():
    # By path: inside pip's build environment the rockstate package is not importable yet.
    here = Path(__file__).resolve().parent / "spark_lines.py"
    spec = importlib.util.spec_from_file_location("rockstate_spark_lines", here)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rockstate_spark_lines", module)
    spec.loader.exec_module(module)
    return module


spark_lines = _load_spark_lines()

JAR_NAME = "rockstate-shim.jar"
BUILD_INFO = "build-info.json"
# The sources inside an installed package (for building on first use next to another line).
PACKAGED_SOURCES = "jvm-src"


class BuildError(RuntimeError):
    """The jar cannot be built here; the message says which piece is missing."""


@dataclass(frozen=True)
class Toolchain:
    java: str
    pyspark_version: str
    line: str
    jars_dir: Path
    compiler_classpath: tuple[Path, ...]


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / "java")] if java_home else []
    candidates.append(shutil.which("java") or "")
    for c in candidates:
        if c and Path(c).exists():
            return c
    raise BuildError(
        "rockstate: Java was not found (no JAVA_HOME and no `java` on PATH). "
        "Install Java 17 or newer (e.g. `apt-get install openjdk-17-jdk-headless`) and retry."
    )


def java_major(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    text = out.stderr + out.stdout
    for token in text.split():
        token = token.strip('"')
        if token[:1].isdigit():
            head = token.split(".")[0]
            major = int(token.split(".")[1]) if head == "1" else int(head.split("-")[0])
            return major
    raise BuildError(f"rockstate: cannot read the Java version from `{java} -version`: {text!r}")


def target_pyspark() -> Path | None:
    """pyspark in the environment being installed into, seen from pip's build environment.

    pip builds in an isolated environment whose ``sys.path`` hides the target's packages, but
    ``sys.prefix`` is still the target's, so its site-packages are found through sysconfig.
    """
    for key in ("purelib", "platlib"):
        root = Path(sysconfig.get_paths()[key]) / "pyspark"
        if (root / "version.py").is_file() and (root / "jars").is_dir():
            return root
    return None


def target_is_client() -> bool:
    """Whether the environment being installed into has Spark Connect's client only
    (``pyspark-client``: the pyspark package without its jars), so rockstate is a Connect
    client there: no jar to build, no JVM to run it."""
    spec = importlib.util.find_spec("pyspark")
    roots = [Path(next(iter(spec.submodule_search_locations)))] \
        if spec is not None and spec.submodule_search_locations else []
    roots += [Path(sysconfig.get_paths()[key]) / "pyspark" for key in ("purelib", "platlib")]
    for root in roots:
        if (root / "version.py").is_file():
            return not (root / "jars").is_dir()
    return False


def pyspark_version(root: Path) -> str:
    version_ns: dict[str, str] = {}
    exec((root / "version.py").read_text(), version_ns)
    return version_ns["__version__"]


def find_pyspark() -> tuple[str, Path]:
    """The pyspark to build for: the importable one (the running one, or the build
    environment's own when the target has none), else the target environment's."""
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
    else:
        root = target_pyspark()
    if root is None:
        raise BuildError(
            "rockstate: pyspark is not installed; install one of the supported lines "
            f"({spark_lines.supported()}), e.g. `pip install 'pyspark==4.3.*'`, and retry."
        )
    version = pyspark_version(root)
    if spark_lines.find(version) is None:
        raise BuildError(spark_lines.unsupported(version))
    jars = root / "jars"
    if not jars.is_dir():
        raise BuildError(f"rockstate: pyspark at {root} has no jars/ folder; reinstall pyspark.")
    return version, jars


def toolchain() -> Toolchain:
    java = find_java()
    major = java_major(java)
    if major < 17:
        raise BuildError(
            f"rockstate: Java {major} found at {java}; Spark 4.3 needs Java 17 or newer. "
            "Point JAVA_HOME at a JDK 17+."
        )
    version, jars = find_pyspark()
    compiler = []
    for name in ("scala-compiler", "scala-library", "scala-reflect"):
        found = sorted(jars.glob(f"{name}-2.13.*.jar"))
        if not found:
            raise BuildError(
                f"rockstate: {name}-2.13 jar is missing from {jars}; the pyspark wheel should "
                "carry it. Reinstall pyspark."
            )
        compiler.append(found[-1])
    line = spark_lines.find(version).line
    return Toolchain(java, version, line, jars, tuple(compiler))


def source_root() -> Path:
    """The folder holding ``jvm-shim/src`` that this rockstate was made from: the checkout (or
    sdist) this module is in, or the installed package's own copy (``jvm-src``, for building on
    first use). Never the working directory or any other folder near it: the jar is written
    into the package's ``jars/``, which every session loads, so building whatever a folder
    holds would install it. Other sources are built only when named (``--sources``)."""
    package = Path(__file__).resolve().parents[1]  # rockstate/, this module is in session/
    checkout = package.parents[1]  # <checkout>/python/rockstate
    if (checkout / "python" / "rockstate").resolve() == package and _has_sources(checkout):
        return checkout
    if _has_sources(package / PACKAGED_SOURCES):
        return package / PACKAGED_SOURCES
    raise BuildError(
        f"rockstate: this installation carries no JVM sources ({package / PACKAGED_SOURCES} "
        "is missing); reinstall rockstate (`pip install --force-reinstall --no-deps "
        "rockstate`), or build from a checkout with `--sources CHECKOUT`."
    )


def _has_sources(base: Path) -> bool:
    return (base / "jvm-shim" / "src" / "main" / "scala").is_dir()


def line_sources(root: Path, line: str) -> list[Path]:
    """The folders compiled for a Spark line: the shared sources and the line's adapters."""
    src = root / "jvm-shim" / "src"
    present = [p.name for p in src.iterdir()] if src.is_dir() else []
    folders = [src / "main" / "scala"] + [
        src / name / "scala" for name in spark_lines.find(line).adapter_folders(present)]
    for f in folders:
        if not f.is_dir():
            raise BuildError(f"rockstate: {f} is missing; the sources for Spark {line} are "
                             "incomplete. Build from a full rockstate checkout.")
    return folders


def line_resources(root: Path) -> Path | None:
    """The files packed into the jar as they are (``META-INF/services``), if any."""
    folder = root / "jvm-shim" / "src" / "main" / "resources"
    return folder if folder.is_dir() else None


def build(out_dir: Path, sources: Path | None = None, quiet: bool = False) -> Path:
    """Compiles the shim for the installed pyspark's line into ``out_dir/rockstate-shim.jar``
    and returns the jar's path. ``sources``: the folder holding ``jvm-shim/src``."""
    tc = toolchain()
    root = sources or source_root()
    files = sorted(p for d in line_sources(root, tc.line) for p in d.rglob("*.scala"))
    out_dir.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"rockstate: compiling {len(files)} Scala files against pyspark "
              f"{tc.pyspark_version} (Spark {tc.line})", file=sys.stderr)
    jar = compile_jar(files, out_dir / JAR_NAME, manifest(tc.line, tc.pyspark_version),
                      quiet=quiet, toolchain_=tc, resources=line_resources(root))
    info = {"pyspark_version": tc.pyspark_version, "spark_line": tc.line, "scala": "2.13",
            "jar": JAR_NAME}
    (out_dir / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return jar


def compile_jar(files: list[Path], jar: Path, manifest_text: str,
                classpath: tuple[Path, ...] = (), quiet: bool = True,
                toolchain_: Toolchain | None = None, resources: Path | None = None) -> Path:
    """Compiles Scala ``files`` against the installed pyspark's jars (and ``classpath``) into
    ``jar`` with the files under ``resources``, written whole or not at all. The tests compile
    their Scala fixtures with it too."""
    tc = toolchain_ or toolchain()
    with tempfile.TemporaryDirectory(prefix="rockstate-build-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        argfile = Path(tmp) / "sources.txt"
        argfile.write_text("\n".join(str(f) for f in files))
        cmd = [
            tc.java,
            "-Xss8m",
            "-cp",
            os.pathsep.join(str(p) for p in tc.compiler_classpath),
            "scala.tools.nsc.Main",
            "-nowarn" if quiet else "-deprecation",
            "-release",
            "17",
            "-d",
            str(classes),
            "-classpath",
            os.pathsep.join([str(tc.jars_dir / "*"), *(str(p) for p in classpath)]),
            f"@{argfile}",
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BuildError(
                "rockstate: the Scala compiler failed:\n" + result.stdout + result.stderr
            )
        tmp_jar = jar.with_name(f"{jar.name}.{os.getpid()}.tmp")  # two builds may race
        with zipfile.ZipFile(tmp_jar, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", manifest_text)
            for path in sorted(classes.rglob("*.class")):
                z.write(path, path.relative_to(classes).as_posix())
            for path in sorted(resources.rglob("*") if resources else ()):
                if path.is_file():
                    z.write(path, path.relative_to(resources).as_posix())
        tmp_jar.replace(jar)
    return jar


def manifest(line: str, pyspark: str) -> str:
    """The jar's manifest: it names the Spark line, so any copy of the jar can be checked."""
    return ("Manifest-Version: 1.0\nCreated-By: rockstate\n"
            f"Rockstate-Spark-Line: {line}\nRockstate-Pyspark-Version: {pyspark}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rockstate.session.build", description=__doc__)
    default_out = Path(__file__).resolve().parents[1] / "jars"
    parser.add_argument("--out", type=Path, default=default_out,
                        help=f"output folder (default: {default_out})")
    parser.add_argument("--sources", type=Path, default=None, metavar="CHECKOUT",
                        help="build from the jvm-shim/ of this folder instead of the sources "
                             "this rockstate was installed with")
    args = parser.parse_args(argv)
    try:
        if args.sources is not None and not _has_sources(args.sources):
            raise BuildError(f"rockstate: {args.sources} has no jvm-shim/src/main/scala; give "
                             "--sources a rockstate checkout")
        jar = build(args.out, sources=args.sources)
    except BuildError as e:
        print(str(e), file=sys.stderr)
        return 2
    print(jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
