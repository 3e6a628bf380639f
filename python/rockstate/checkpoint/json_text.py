"""JSON read from a checkpoint file, as untrusted input.

Python's ``json`` accepts what no writer of a checkpoint produces and what would steer a reader
wrong: ``NaN`` and ``Infinity``, numbers past a double's range (``1e400`` reads as infinity,
and ``int()`` of it fails), nesting deep enough to exhaust the interpreter's stack. Every JSON
document and line a reader takes from a checkpoint goes through :func:`load_json`, which
refuses those with ``CorruptCheckpointError`` naming the file.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rockstate.errors import CorruptCheckpointError

# Deeper than any document Spark or rockstate writes (a schema of nested structs included).
MAX_DEPTH = 64


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a checkpoint holds")


def load_json(data: bytes | str, where: str, what: str = "file") -> Any:
    """The JSON value of ``data`` (a file's bytes or one of its lines); CorruptCheckpointError
    naming ``what`` ``where`` for anything else."""
    try:
        value = json.loads(data, parse_float=_finite, parse_constant=_constant)
    except RecursionError:
        raise _damaged(what, where, "it is nested too deeply") from None
    except (ValueError, UnicodeDecodeError, TypeError) as e:
        raise _damaged(what, where, f"not valid JSON: {e}") from None
    if _depth(value) > MAX_DEPTH:
        raise _damaged(what, where, f"it is nested more than {MAX_DEPTH} deep")
    return value


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else \
            item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def _damaged(what: str, where: str, why: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(f"{what} {where} is damaged ({why}); restore it from a "
                                  "trusted copy.")
