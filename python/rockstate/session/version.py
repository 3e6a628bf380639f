"""rockstate's version, in one place: the Python package's (``rockstate.__version__``) and the
jar's of every Spark line (``io.rockstate:rockstate-spark-<line>_2.13``, build.sbt)."""

VERSION = "0.1.0"
