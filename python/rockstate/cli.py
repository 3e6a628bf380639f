"""The ``rockstate`` command: build the jar, run the demo, print the Spark configuration."""

from __future__ import annotations

import argparse
import sys

from rockstate.errors import RockstateError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rockstate", description="rockstate tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="compile the JVM shim jar against the installed pyspark")
    sub.add_parser("demo", help="run a streaming aggregation on rockstate")
    sub.add_parser("spark-defaults", help="print spark-defaults.conf lines for rockstate")
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command == "build":
            from rockstate.build import main as build_main

            return build_main(rest)
        if args.command == "demo":
            from rockstate.demo import main as demo_main

            return demo_main(rest)
        from rockstate.session import spark_defaults

        print(spark_defaults())
        return 0
    except RockstateError as e:
        print(str(e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
