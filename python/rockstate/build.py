"""Build rockstate's JVM shim with the Scala compiler that ships inside the pyspark wheel.

``python -m rockstate.build`` compiles ``jvm-shim/src/main/scala`` against the installed
pyspark's jars and writes ``rockstate-shim.jar`` plus ``build-info.json`` (the pyspark version it
was built for). ``pip install`` runs the same build through ``setup.py``. This module imports
nothing beyond the standard library so that it also runs inside pip's build environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

JAR_NAME = "rockstate-shim.jar"
BUILD_INFO = "build-info.json"
SUPPORTED_PYSPARK = "4.3."


class BuildError(RuntimeError):
    """The jar cannot be built here; the message says which piece is missing."""


@dataclass(frozen=True)
class Toolchain:
    java: str
    pyspark_version: str
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


def find_pyspark() -> tuple[str, Path]:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(
            "rockstate: pyspark is not installed; install the supported version with "
            "`pip install 'pyspark==4.3.*'` and retry."
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    version_ns: dict[str, str] = {}
    exec((root / "version.py").read_text(), version_ns)
    version = version_ns["__version__"]
    if not version.startswith(SUPPORTED_PYSPARK):
        raise BuildError(
            f"rockstate: pyspark {version} is installed but rockstate is built for pyspark "
            f"{SUPPORTED_PYSPARK}x; run `pip install 'pyspark=={SUPPORTED_PYSPARK}*'`."
        )
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
    return Toolchain(java, version, jars, tuple(compiler))


def source_root() -> Path:
    """jvm-shim/src/main/scala, next to the Python package in a checkout or an sdist."""
    here = Path(__file__).resolve().parent
    for base in (here.parent.parent, here.parent, Path.cwd()):
        candidate = base / "jvm-shim" / "src" / "main" / "scala"
        if candidate.is_dir():
            return candidate
    raise BuildError(
        "rockstate: jvm-shim/src/main/scala was not found; build from a rockstate checkout."
    )


def build(out_dir: Path, sources: Path | None = None, quiet: bool = False) -> Path:
    """Compiles the shim into ``out_dir/rockstate-shim.jar`` and returns the jar's path."""
    tc = toolchain()
    src = sources or source_root()
    files = sorted(str(p) for p in src.rglob("*.scala"))
    if not files:
        raise BuildError(f"rockstate: no Scala sources under {src}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rockstate-build-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        argfile = Path(tmp) / "sources.txt"
        argfile.write_text("\n".join(files))
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
            str(tc.jars_dir / "*"),
            f"@{argfile}",
        ]
        if not quiet:
            print(f"rockstate: compiling {len(files)} Scala files against pyspark "
                  f"{tc.pyspark_version}", file=sys.stderr)
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BuildError(
                "rockstate: the Scala compiler failed:\n" + result.stdout + result.stderr
            )
        jar = out_dir / JAR_NAME
        tmp_jar = out_dir / (JAR_NAME + ".tmp")
        with zipfile.ZipFile(tmp_jar, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: rockstate\n")
            for path in sorted(classes.rglob("*.class")):
                z.write(path, path.relative_to(classes).as_posix())
        tmp_jar.replace(jar)
    info = {"pyspark_version": tc.pyspark_version, "scala": "2.13", "jar": JAR_NAME}
    (out_dir / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return jar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rockstate.build", description=__doc__)
    default_out = Path(__file__).resolve().parent / "jars"
    parser.add_argument("--out", type=Path, default=default_out,
                        help=f"output folder (default: {default_out})")
    args = parser.parse_args(argv)
    try:
        jar = build(args.out)
    except BuildError as e:
        print(str(e), file=sys.stderr)
        return 2
    print(jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
