"""PostgreSQL arrays in the binary wire format, packed in one pass per column.

The persister sends a batch as column arrays (unnest). psycopg dumps a list element by element
in Python, which cost the persister more CPU per event than decoding its messages; these pack
a column with precompiled structs instead. The format is array_send's: a header (dimensions,
a has-nulls flag, the element type, the length and lower bound), then each element as a
length (-1 for NULL) and its binary form. Text is encoded in the connection's client encoding,
which is what the server expects of binary text.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TypeVar

from psycopg import adapters
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEADER = struct.Struct(">iiIii")  # ndim, has nulls, element oid, length, lower bound
_EMPTY = struct.Struct(">iiI")  # ndim 0: no dimension follows
_LENGTH = struct.Struct(">i")
_INT8 = struct.Struct(">iq")
_FLOAT8 = struct.Struct(">id")
_NULL = _LENGTH.pack(-1)
_TRUE, _FALSE = b"\x00\x00\x00\x01\x01", b"\x00\x00\x00\x01\x00"
_EPOCH_2000_MS = 946_684_800_000  # timestamptz counts microseconds from 2000-01-01 UTC


class PackedArray(bytes):
    """An array already in binary wire form; the subclass says its type."""

    oid = 0
    element_oid = 0


_Array = TypeVar("_Array", bound=PackedArray)


def _array(cls: type[_Array], count: int, has_nulls: bool, body: bytes) -> _Array:
    if not count:
        return cls(_EMPTY.pack(0, 0, cls.element_oid))
    return cls(_HEADER.pack(1, int(has_nulls), cls.element_oid, count, 1) + body)


class Int8Array(PackedArray):
    oid, element_oid = 1016, 20


class Float8Array(PackedArray):
    oid, element_oid = 1022, 701


class BoolArray(PackedArray):
    oid, element_oid = 1000, 16


class TextArray(PackedArray):
    oid, element_oid = 1009, 25


class UuidArray(PackedArray):
    oid, element_oid = 2951, 2950


class JsonArray(PackedArray):
    oid, element_oid = 199, 114


class JsonbArray(PackedArray):
    oid, element_oid = 3807, 3802


class TimestamptzArray(PackedArray):
    oid, element_oid = 1185, 1184


def int8_array(values: Sequence[int | None]) -> Int8Array:
    pack = _INT8.pack
    body = b"".join(_NULL if v is None else pack(8, v) for v in values)
    return _array(Int8Array, len(values), None in values, body)


def float8_array(values: Sequence[float]) -> Float8Array:
    pack = _FLOAT8.pack
    body = b"".join(pack(8, v) for v in values)
    return _array(Float8Array, len(values), False, body)


def bool_array(values: Sequence[bool]) -> BoolArray:
    body = b"".join(_TRUE if v else _FALSE for v in values)
    return _array(BoolArray, len(values), False, body)


def _texts(values: Sequence[str | None], encoding: str, prefix: bytes = b"") -> bytes:
    pack = _LENGTH.pack
    parts = []
    for value in values:
        if value is None:
            parts.append(_NULL)
        else:
            data = prefix + value.encode(encoding)
            parts.append(pack(len(data)))
            parts.append(data)
    return b"".join(parts)


def text_array(values: Sequence[str | None], encoding: str = "utf-8") -> TextArray:
    return _array(TextArray, len(values), None in values, _texts(values, encoding))


def json_array(values: Sequence[str], encoding: str = "utf-8") -> JsonArray:
    """JSON documents as text: json's binary form is its text."""
    return _array(JsonArray, len(values), False, _texts(values, encoding))


def jsonb_array(values: Sequence[str | None], encoding: str = "utf-8") -> JsonbArray:
    """JSON documents as text behind jsonb's binary format version (1)."""
    body = _texts(values, encoding, b"\x01")
    return _array(JsonbArray, len(values), None in values, body)


def uuid_array(values: Sequence[str]) -> UuidArray:
    """Canonical UUID strings (8-4-4-4-12 hex digits) as their 16 bytes."""
    sixteen = _LENGTH.pack(16)
    body = b"".join(sixteen + bytes.fromhex(v.replace("-", "")) for v in values)
    return _array(UuidArray, len(values), False, body)


def timestamptz_array_from_ms(values: Sequence[int]) -> TimestamptzArray:
    """Unix milliseconds as timestamptz."""
    pack = _INT8.pack
    body = b"".join(pack(8, (ms - _EPOCH_2000_MS) * 1000) for ms in values)
    return _array(TimestamptzArray, len(values), False, body)


def _dumper(cls: type[PackedArray]) -> type[Dumper]:
    class PackedDumper(Dumper):
        format = Format.BINARY
        oid = cls.oid

        def dump(self, obj: bytes) -> bytes:
            return obj

    return PackedDumper


for _cls in (
    Int8Array,
    Float8Array,
    BoolArray,
    TextArray,
    UuidArray,
    JsonArray,
    JsonbArray,
    TimestamptzArray,
):
    adapters.register_dumper(_cls, _dumper(_cls))
