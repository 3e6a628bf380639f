"""Value schemas a transform changed (``rockstate.tools.schema_change``), read back so that a
version written before the change is decoded by the schema it was written with.

Spark keeps one schema file of format v2 per store, and the transform replaces it; the
rewrite batch ``L``'s offset log entry records each changed store's schema before and after
(``SCHEMAS_KEY``). Versions of batches before ``L`` have the schema before, the others the
file's, until the next change.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.offsets import entry_confs, entry_lines, log_entries
from rockstate.checkpoint.state_schema import v2_schemas
from rockstate.errors import CorruptCheckpointError

# The rewrite batch's offset log entry: {"<op>/<store>": {"key", "before", "after"}}.
SCHEMAS_KEY = "rockstate.rewrite.valueSchemas"


@dataclass(frozen=True)
class SchemaChange:
    operator_id: int
    store_name: str
    key: dict  # Spark types as JSON; the key schema stays
    before: dict
    after: dict


def parse_changes(text: str, where: str) -> list[SchemaChange]:
    """The changes ``SCHEMAS_KEY``'s value records (untrusted: every part checked)."""
    damaged = CorruptCheckpointError(
        f"rockstate: {where} records its schema changes ({SCHEMAS_KEY}) in a form rockstate "
        "did not write; the offset log entry is damaged.")
    try:
        entries = json.loads(text)
    except ValueError:
        raise damaged from None
    if not isinstance(entries, dict):
        raise damaged
    changes = []
    for name, schemas in entries.items():
        op, _, store = name.partition("/")
        if not (op.isdigit() and len(op) < 10 and store and isinstance(schemas, dict) and all(
                isinstance(schemas.get(k), dict) for k in ("key", "before", "after"))):
            raise damaged
        changes.append(SchemaChange(int(op), store, schemas["key"], schemas["before"],
                                      schemas["after"]))
    return changes


def changed_at(loc: CheckpointLocation, operator: int, store: str,
               after_batch: int) -> list[tuple[int, SchemaChange]]:
    """The rewrite batches after ``after_batch`` that changed the store's value schema, oldest
    first, with what they recorded."""
    offsets = loc.path("offsets")
    found = []
    for batch in sorted(b for b in log_entries(loc.fs, offsets) if b > after_batch):
        path = posixpath.join(offsets, str(batch))
        try:
            data = loc.read_path(path, "the schema changes", FileKind.LOG_ENTRY)
        except FileNotFoundError:
            continue  # a compacted or removed entry records no change to read
        text = entry_confs(entry_lines(data, path)).get(SCHEMAS_KEY)
        if text is None:
            continue
        found += [(batch, c) for c in parse_changes(text, path)
                  if (c.operator_id, c.store_name) == (operator, store)]
    return found


def schemas_of_batch(loc: CheckpointLocation, operator: int, store: str,
                     batch: int) -> tuple[dict, dict]:
    """(key schema, value schema) of the store's state as batch ``batch`` committed it: the
    schema file's, or the schema before the first change after that batch."""
    return schemas_before(loc, operator, store, changed_at(loc, operator, store, batch))


def schemas_before(loc: CheckpointLocation, operator: int, store: str,
                   later: list[tuple[int, SchemaChange]]) -> tuple[dict, dict]:
    """(key schema, value schema) of the store before the changes ``later`` (``changed_at``
    of a batch): the schema file's when there are none."""
    key, value = v2_schemas(loc, operator, store)
    return (key, later[0][1].before) if later else (key, value)
