// Builds the same rockstate-shim.jar as `python -m rockstate.session.build` and runs the JVM
// tests.
//
// Spark 4.3 is not taken from a Maven repository: the shim compiles against the jars of the
// installed pyspark wheel (the very jars it runs with), found through `python3 -c "import
// pyspark"` or the ROCKSTATE_SPARK_JARS folder. They are unmanaged and not packaged, like
// `provided` dependencies. Maven Central supplies only sbt itself and ScalaTest.
// Run it with `dev/sbt test package` (no installed sbt needed; see docs/development.md).

import scala.sys.process._

lazy val sparkJarsDir: File = sys.env.get("ROCKSTATE_SPARK_JARS").map(file).getOrElse {
  val python = sys.env.getOrElse("PYTHON", "python3")
  val dir = Seq(python, "-c",
    "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))").!!.trim
  file(dir)
}

lazy val sparkJars: Seq[File] = {
  val all = Option(sparkJarsDir.listFiles()).getOrElse(
    sys.error(s"rockstate: no Spark jars in $sparkJarsDir; `pip install pyspark==4.3.0` or set " +
      "ROCKSTATE_SPARK_JARS to a Spark 4.3 jars folder")).toSeq
  // sbt brings the Scala library and compiler of the same version itself.
  all.filter(f => f.getName.endsWith(".jar") && !f.getName.startsWith("scala-compiler") &&
    !f.getName.startsWith("scala-library") && !f.getName.startsWith("scala-reflect"))
}

// The Spark line of those jars picks the line's adapter folder, jvm-shim/src/spark-<line>/scala
// (the table of lines is python/rockstate/session/spark_lines.py).
lazy val sparkVersion: String = sparkJarsDir.listFiles().map(_.getName)
  .collectFirst { case n if n.startsWith("spark-sql_2.13-") && n.endsWith(".jar") =>
    n.stripPrefix("spark-sql_2.13-").stripSuffix(".jar") }
  .getOrElse(sys.error(s"rockstate: no spark-sql_2.13 jar in $sparkJarsDir"))

lazy val sparkLine: String = sparkVersion.split('.').take(2).mkString(".")

lazy val scalaFromSpark: String = sparkJarsDir.listFiles().map(_.getName)
  .collectFirst { case n if n.startsWith("scala-library-2.13.") =>
    n.stripPrefix("scala-library-").stripSuffix(".jar") }
  .getOrElse("2.13.18")

ThisBuild / scalaVersion := scalaFromSpark
ThisBuild / organization := "io.rockstate"
// The one version, shared with the Python package (python/rockstate/session/version.py).
ThisBuild / version := {
  val declared = IO.read(file("python/rockstate/session/version.py"))
  "VERSION = \"([^\"]+)\"".r.findFirstMatchIn(declared).map(_.group(1))
    .getOrElse(sys.error("rockstate: no VERSION in python/rockstate/session/version.py"))
}
ThisBuild / versionScheme := Some("early-semver")

lazy val shim = (project in file("jvm-shim"))
  .settings(
    name := "rockstate-shim",
    Compile / unmanagedJars ++= sparkJars.map(Attributed.blank),
    // The line's own folder and every shared spark-<from>+ folder at or below it (the rule
    // python/rockstate/session/spark_lines.py's adapter_folders applies for pip's build).
    Compile / unmanagedSourceDirectories ++= {
      val src = baseDirectory.value / "src"
      val own = src / s"spark-$sparkLine" / "scala"
      if (!own.isDirectory) sys.error(s"rockstate: Spark $sparkLine ($sparkVersion) has no " +
        s"adapter folder $own; supported lines are in " +
        "python/rockstate/session/spark_lines.py")
      def numbers(line: String): (Int, Int) = {
        val Array(major, minor) = line.split('.').map(_.toInt)
        (major, minor)
      }
      val shared = Option(src.listFiles()).toSeq.flatten.map(_.getName)
        .filter(n => n.startsWith("spark-") && n.endsWith("+"))
        .map(n => (numbers(n.stripPrefix("spark-").stripSuffix("+")), n))
        .filter { case (from, _) => Ordering[(Int, Int)].lteq(from, numbers(sparkLine)) }
        .sortBy(_._1).map { case (_, n) => src / n / "scala" }
      own +: shared
    },
    // Published (dev/maven-repo) as io.rockstate:rockstate-spark-<line>_2.13, one artifact per
    // Spark line as Delta and Iceberg do: the jar, its sources and a POM naming Spark as
    // provided. The Scala library comes with Spark (the jars folder), so the POM does not
    // name it: --packages would otherwise fetch a second copy.
    moduleName := s"rockstate-spark-$sparkLine",
    description := "rockstate: a RocksDB state store provider for Spark Structured Streaming",
    Compile / packageDoc / publishArtifact := false,
    Test / publishArtifact := false,
    publishMavenStyle := true,
    publishTo := sys.env.get("ROCKSTATE_MAVEN_REPO").map(dir =>
      ("rockstate-repo" at file(dir).toURI.toString).withAllowInsecureProtocol(true)),
    pomPostProcess := { (pom: scala.xml.Node) =>
      import scala.xml._
      import scala.xml.transform._
      val spark = <dependency>
          <groupId>org.apache.spark</groupId>
          <artifactId>spark-sql_2.13</artifactId>
          <version>{sparkVersion}</version>
          <scope>provided</scope>
        </dependency>
      new RuleTransformer(new RewriteRule {
        override def transform(n: Node): Seq[Node] = n match {
          case e: Elem if e.label == "dependencies" =>
            e.copy(child = e.child.filterNot(d => (d \ "scope").text == "test" ||
              (d \ "artifactId").text == "scala-library") :+ spark)
          case other => other
        }
      }).transform(pom).head
    },
    Compile / packageBin / packageOptions += Package.ManifestAttributes(
      "Rockstate-Spark-Line" -> sparkLine, "Rockstate-Pyspark-Version" -> sparkVersion),
    Test / unmanagedJars ++= sparkJars.map(Attributed.blank),
    // The test kit (fault-injecting file system, store audit): the JVM suites and the Python
    // suites' test jar use it; it never goes into the user's jar.
    Test / unmanagedSourceDirectories += baseDirectory.value / "src" / "testkit" / "scala",
    libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
    libraryDependencies += "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
    scalacOptions ++= Seq("-deprecation", "-feature", "-release", "17"),
    // Classes per Spark line (dev/spark-suites compiles the shim for another line than the
    // installed pyspark's); the jar stays where the docs and ROCKSTATE_JAR expect it.
    target := baseDirectory.value / "target" / s"spark-$sparkLine",
    Compile / packageBin / artifactPath := baseDirectory.value / "target" / "rockstate-shim.jar",
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= Seq(
      "-Xmx1g",
      "--add-opens=java.base/java.lang=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
      "--add-opens=java.base/java.io=ALL-UNNAMED",
      "--add-opens=java.base/java.net=ALL-UNNAMED",
      "--add-opens=java.base/java.nio=ALL-UNNAMED",
      "--add-opens=java.base/java.util=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
      "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
      "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED"))

// Spark's own provider-generic test suites, run against rockstate (dev/spark-suites): compiled
// against the Spark of the jars folder and that same release's test classes from Maven Central
// (its `tests` jars, taken without their dependencies: the jars folder has them). Only a Spark
// release published to Maven with its tests fits (4.2.0 is the newest). Not in `root`, so
// `dev/sbt test` never resolves it.
lazy val sparkSuites = (project in file("spark-suites"))
  .dependsOn(shim)
  .settings(
    Compile / unmanagedJars ++= sparkJars.map(Attributed.blank),
    Test / unmanagedJars ++= sparkJars.map(Attributed.blank),
    libraryDependencies ++= Seq("spark-core", "spark-catalyst", "spark-sql", "spark-common-utils",
      "spark-sql-api").map(m => ("org.apache.spark" %% m % sparkVersion % Test)
        .classifier("tests").intransitive()),
    libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
    libraryDependencies += "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
    scalacOptions ++= Seq("-feature", "-release", "17"),
    Test / fork := true,
    Test / parallelExecution := false,
    // As Spark's own build runs these suites.
    Test / envVars += "SPARK_TESTING" -> "1",
    Test / javaOptions ++= (shim / Test / javaOptions).value.filterNot(_.startsWith("-Xmx")) ++
      Seq("-Xmx2g", "-Dspark.testing=1", "-Dspark.ui.enabled=false", "-Dspark.ui.showConsoleProgress=false"),
    publish / skip := true)

lazy val root = (project in file("."))
  .aggregate(shim)
  .settings(publish / skip := true)
