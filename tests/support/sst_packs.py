"""Stores rewritten so that one pack holds every SST, for tests of reading packs by range."""

from __future__ import annotations

import json
from pathlib import Path

JOINED = "1-00000000-0000-0000-0000-000000000000.pack"


def join_into_one_pack(store: Path, lead: int = 0) -> tuple[Path, dict[str, int]]:
    """Every SST object the store's snapshot manifests name (plain SSTs or packs) joined end
    to end into one pack, after ``lead`` bytes no manifest names (as a member compacted away
    leaves them), and every snapshot manifest rewritten (format 5) to name its SSTs as members
    of it; returns the pack and where each original object starts in it."""
    snapshots = sorted((store / "snapshots").glob("*.json"))
    docs = {s: json.loads(s.read_bytes()) for s in snapshots}
    objects = sorted({f["path"] for d in docs.values() for f in d["files"] if f["kind"] == "sst"},
                     key=lambda rel: (int(rel.split("/")[-1].split("-")[0]), rel))
    starts: dict[str, int] = {}
    data = bytearray(lead)
    for rel in objects:
        starts[rel] = len(data)
        data += (store / rel).read_bytes()
    pack = store / "sst" / JOINED
    pack.write_bytes(bytes(data))
    for s, doc in docs.items():
        doc["formatVersion"] = 5
        for f in doc["files"]:
            if f["kind"] == "sst":
                inner = (f.get("inPack") or {}).get("offset", 0)
                f["inPack"] = {"offset": starts[f["path"]] + inner, "packSize": len(data)}
                f["path"] = f"sst/{JOINED}"
        s.write_text(json.dumps(doc))
    for rel in objects:
        (store / rel).unlink()
    return pack, starts
