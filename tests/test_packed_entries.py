"""A store's entries packed into Arrow (rockstate.encoding.packed_entries) against the plain Python
lists they stand for: packing across batch boundaries, a column family's entries with its
prefix stripped (from sliced arrays too), and the keys seen one at a time for bisection."""

from __future__ import annotations

from bisect import bisect_left

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rockstate.encoding import packed_entries
from rockstate.encoding.packed_entries import BINARY, SortedKeys, pack, with_prefix


def test_packing_keeps_every_entry_in_order_across_batches(monkeypatch):
    monkeypatch.setattr(packed_entries, "_BATCH", 3)
    for n in (0, 1, 3, 4, 6, 7):
        entries = [(f"k{i}".encode(), b"v" * i) for i in range(n)]
        keys, values = pack(iter(entries))
        assert keys.type == values.type == BINARY
        assert list(zip(keys.to_pylist(), values.to_pylist(), strict=True)) == entries


PREFIXES = st.sampled_from([b"\x00\x01", b"\x00\x02", b"\x01", b""])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(PREFIXES, st.binary(max_size=20), st.binary(max_size=5))),
       st.sampled_from([b"\x00\x01", b"\x00\x02", b"\x01"]), st.integers(0, 3))
def test_a_familys_entries_are_those_with_its_prefix_stripped(rows, prefix, cut):
    keys = [p + k for p, k, _ in rows]
    values = [v for _, _, v in rows]
    padded_keys = pa.array([b"pad"] * cut + keys + [b"pad"] * cut, type=BINARY)
    padded_values = pa.array([b"pad"] * cut + values + [b"pad"] * cut, type=BINARY)
    got_keys, got_values = with_prefix(padded_keys.slice(cut, len(keys)),
                                       padded_values.slice(cut, len(keys)), prefix)
    got_keys.validate(full=True)
    expected = [(k[len(prefix):], v) for k, v in zip(keys, values, strict=True)
                if k.startswith(prefix)]
    assert list(zip(got_keys.to_pylist(), got_values.to_pylist(), strict=True)) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=6), unique=True), st.binary(max_size=6), st.integers(0, 2))
def test_sorted_keys_bisect_as_a_list_does(keys, probe, cut):
    keys.sort()
    array = pa.array([b""] * cut + keys, type=BINARY).slice(cut)
    view = SortedKeys(array)
    assert len(view) == len(keys) and list(view) == keys
    assert bisect_left(view, probe) == bisect_left(keys, probe)
