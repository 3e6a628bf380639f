"""What the suites share: streams run against an oracle (``streams``), the queries several
suites run (``queries``), the S3 server (``s3``), executor processes (``executors``), polling
(``polling``), the command line (``cli``), the browser (``browser``), time bounds
(``time_bound``), the JVM test kit (``testkit_jar``), the rescale child process
(``rewrite_child``) and the Spark Connect client's venv (``connect_client``)."""
