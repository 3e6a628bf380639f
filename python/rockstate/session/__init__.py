"""Session set-up: rockstate's settings on a Spark session's builder (classic or Spark Connect),
the jar that carries its JVM classes (built, found, checked), and the JVM they run in."""
