"""Tests for howeval.records: keys, the one required-columns check, schema conformance."""
from __future__ import annotations

import doctest

import pyarrow as pa
import pytest

from howeval import records
from howeval.records import KEY, RESPONSE_KEY, VERIFY_TYPE, MissingColumnsError, check_columns, conform, key_of


def test_doctests():
    assert doctest.testmod(records).failed == 0


def test_check_columns_lists_missing_and_present():
    check_columns(["a", "b", "c"], ("a", "b"), "Stage")  # nothing missing: no error
    with pytest.raises(MissingColumnsError) as e:
        check_columns({"b": 1}, {"a": "first", "b": "second", "c": "third"}, "Stage")
    assert str(e.value) == "Stage: missing columns ['a', 'c'] (a: first; c: third); present: ['b']"
    assert isinstance(e.value, KeyError) and isinstance(e.value, ValueError)  # either except clause catches it
    with pytest.raises(ValueError, match=r"^item 3: missing keys \['x'\]; present: \[\]$"):
        check_columns([], ["x"], "item 3", "keys")


def test_key_of():
    row = {"sample_id": "s1", "config": "c", "mode": "NT", "response_hash": "h"}
    assert KEY == ("sample_id", "config", "mode") and RESPONSE_KEY == (*KEY, "response_hash")
    assert key_of(row) == ("s1", "c", "NT") and key_of(row, RESPONSE_KEY) == ("s1", "c", "NT", "h")
    with pytest.raises(KeyError, match=r"missing key columns \['mode'\]"):
        key_of({"sample_id": "s1", "config": "c"})


def test_verify_struct_round_trip():
    schema = pa.schema([("v", VERIFY_TYPE)])
    v = {"correct": None, "extracted": "4", "method": "llm_error", "reason": "timeout"}
    assert conform([{"v": v}, {}], schema).to_pylist() == [{"v": v}, {"v": None}]
