"""The changelog overlay (rockstate.encoding.changelog_overlay) against the plain replay it stands
for: every op applied in order to a dict of the snapshot's entries. Applied to the snapshot's
sorted keys and values in Arrow (what read_state does) and streamed past the snapshot's keys
(what export does), it must give the same entries for any sequence of puts, deletes, merges and
range deletes."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rockstate.encoding.changelog_overlay import ChangelogOverlay

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"])
VALUES = st.sampled_from([b"1", b"2", b"3"])
OPS = st.one_of(
    st.tuples(st.just("put"), KEYS, VALUES),
    st.tuples(st.just("delete"), KEYS, st.none()),
    st.tuples(st.just("merge"), KEYS, VALUES),
    st.tuples(st.just("deleteRange"), KEYS, KEYS),
)


def _replayed(snapshot: dict[bytes, bytes], ops: list[tuple]) -> dict[bytes, bytes]:
    entries = dict(snapshot)
    for op, key, value in ops:
        if op == "put":
            entries[key] = value
        elif op == "delete":
            entries.pop(key, None)
        elif op == "merge":
            old = entries.get(key)
            entries[key] = value if old is None else old + b"," + value
        else:
            for k in [k for k in entries if key <= k < value]:
                del entries[k]
    return entries


def _overlay(ops: list[tuple]) -> ChangelogOverlay:
    overlay = ChangelogOverlay()
    for op, key, value in ops:
        if op == "put":
            overlay.put(key, value)
        elif op == "delete":
            overlay.delete(key)
        elif op == "merge":
            overlay.merge(key, value)
        else:
            overlay.delete_range(key, value)
    return overlay


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, VALUES), st.lists(OPS, max_size=12))
def test_the_overlay_gives_what_replaying_every_op_gives(snapshot, ops):
    expected = _replayed(snapshot, ops)
    streamed = list(_overlay(ops).stream((k, snapshot[k]) for k in sorted(snapshot)))
    assert dict(streamed) == expected and len(streamed) == len(expected)
    keys = sorted(snapshot)
    applied_keys, applied_values = _overlay(ops).apply_to_arrays(
        pa.array(keys, type=pa.large_binary()),
        pa.array([snapshot[k] for k in keys], type=pa.large_binary()))
    applied = list(zip(applied_keys.to_pylist(), applied_values.to_pylist(), strict=True))
    # The same entries in the same order as the stream: the snapshot's, then those added.
    assert applied == streamed
