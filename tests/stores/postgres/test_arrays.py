"""The persister's binary arrays reach PostgreSQL exactly: every type, empty, NULLs, and the
values a text format would have to escape."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from leaderboard.stores.postgres import arrays as pg_arrays

TEXTS = ["", "a", 'say "hi"', "back\\slash", "{brace}", "comma,", "NULL", "ünï 🎮", "x" * 5000]


@pytest.fixture(scope="module")
def conn(database_url):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def _back(conn, sql, value):
    return conn.execute(sql, (value,)).fetchone()[0]


def test_text_with_nulls_and_everything_a_literal_would_escape(conn):
    values = [*TEXTS, None]
    assert _back(conn, "SELECT %b::text[]", pg_arrays.text_array(values)) == values
    # one element per row, as unnest reads it
    rows = conn.execute(
        "SELECT t FROM unnest(%b::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
        (pg_arrays.text_array(values),),
    ).fetchall()
    assert [t for (t,) in rows] == values


def test_numbers_booleans_and_their_edges(conn):
    ints = [0, -1, 1, 2**63 - 1, -(2**63), None, 42]
    assert _back(conn, "SELECT %b::int8[]", pg_arrays.int8_array(ints)) == ints
    floats = [0.0, 1.5, -1e300, 1e-300, float(2**53), 123456.789]
    assert _back(conn, "SELECT %b::float8[]", pg_arrays.float8_array(floats)) == floats
    negative_zero = _back(conn, "SELECT (%b::float8[])[1]::text", pg_arrays.float8_array([-0.0]))
    assert negative_zero == "-0"
    flags = [True, False, False, True]
    assert _back(conn, "SELECT %b::bool[]", pg_arrays.bool_array(flags)) == flags


def test_uuids_json_jsonb_and_times(conn):
    ids = [str(uuid.uuid4()), str(uuid.uuid4()).upper(), "00000000-0000-7000-8000-000000000000"]
    got = _back(conn, "SELECT %b::uuid[]", pg_arrays.uuid_array(ids))
    assert got == [uuid.UUID(i) for i in ids]

    documents = ['{"b": 1,  "a": [1, 2]}', '"ünï"', "[]", '{"q": "say \\"hi\\""}']
    kept = _back(conn, "SELECT %b::json[]::text[]", pg_arrays.json_array(documents))
    assert kept == documents  # json keeps the text exactly as given
    objects = [*documents, None]
    parsed = _back(conn, "SELECT %b::jsonb[]", pg_arrays.jsonb_array(objects))
    assert parsed == [json.loads(d) for d in documents] + [None]

    ms = [0, 1_795_000_000_123, -86_400_001, 946_684_800_000]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    times = _back(conn, "SELECT %b::timestamptz[]", pg_arrays.timestamptz_array_from_ms(ms))
    assert times == [epoch + timedelta(milliseconds=m) for m in ms]


@pytest.mark.parametrize(
    ("build", "cast"),
    [
        (pg_arrays.text_array, "text"),
        (pg_arrays.int8_array, "int8"),
        (pg_arrays.float8_array, "float8"),
        (pg_arrays.bool_array, "bool"),
        (pg_arrays.uuid_array, "uuid"),
        (pg_arrays.json_array, "json"),
        (pg_arrays.jsonb_array, "jsonb"),
        (pg_arrays.timestamptz_array_from_ms, "timestamptz"),
    ],
)
def test_empty_arrays(conn, build, cast):
    assert _back(conn, f"SELECT cardinality(%b::{cast}[])", build([])) == 0
