"""The ``rockstate`` command: build the jar, run the demo, print the Spark configuration, and
inspect or verify a checkpoint location without Spark."""

from __future__ import annotations

import argparse
import json
import sys

from rockstate.errors import RockstateError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rockstate", description="rockstate tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="compile the JVM shim jar against the installed pyspark")
    sub.add_parser("demo", help="run a streaming aggregation on rockstate")
    sub.add_parser("spark-defaults", help="print spark-defaults.conf lines for rockstate")
    for name, text in (("inspect", "list a checkpoint's stores, versions and snapshots"),
                       ("verify", "check every file a checkpoint's versions need; exit 1 on a "
                                  "problem")):
        p = sub.add_parser(name, help=text)
        p.add_argument("location", help="the query's checkpointLocation (path or fsspec URL)")
        p.add_argument("--json", action="store_true", help="print JSON for scripts")
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command in ("inspect", "verify"):
            return _checkpoint_command(args)
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


def _checkpoint_command(args: argparse.Namespace) -> int:
    from rockstate.location import CheckpointLocation

    location = CheckpointLocation(args.location)
    if args.command == "inspect":
        summary = location.summary()
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        print(f"{summary['location']}: operators {summary['operators']}")
        print(f"{'op':>3} {'part':>4} {'store':<26} {'versions':<14} {'snapshots':<14} "
              f"{'keys':>9}  column families")
        for s in summary["stores"]:
            v, snaps = s["versions"], s["snapshots"]
            print(f"{s['operator']:>3} {s['partition']:>4} {s['store']:<26} "
                  f"{_span(v):<14} {_span(snaps):<14} {s['numKeys']:>9}  "
                  f"{', '.join(s['columnFamilies'])}")
        if summary["checkpoints"]:
            print(f"completed checkpoints: {'version':>8} {'batch':>6} {'stores':>6} "
                  f"{'keys':>9} {'state bytes':>12}")
            for c in summary["checkpoints"]:
                print(f"{'':<22} {c['version']:>8} {c['batchId']:>6} {c['stores']:>6} "
                      f"{c['numKeys']:>9} {c['stateBytes']:>12}")
        return 0
    from rockstate.verify import verify

    progress = None if args.json else (lambda store: print(f"checking {store}",
                                                           file=sys.stderr))
    report = verify(location, progress=progress)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        for p in report.problems:
            print(f"PROBLEM {p}")
        print(f"{report.stores} stores, {report.versions} versions, "
              f"{report.checkpoints} completed checkpoints, {report.files_checked} "
              f"files ({report.bytes_checked} bytes) checked: "
              f"{'OK' if report.ok else f'{len(report.problems)} problems'}")
    return 0 if report.ok else 1


def _span(values: list[int]) -> str:
    if not values:
        return "-"
    return str(values[0]) if len(values) == 1 else f"{values[0]}..{values[-1]} ({len(values)})"


if __name__ == "__main__":
    sys.exit(main())
