"""Trace files on disk, read and written in one place: whole or not at all (a temporary file,
then a rename), gzip-compressed when the name ends in ".gz" (Perfetto's UI opens those too;
a trace is about 290 KB of JSON per thousand calls, about 18 KB compressed). rma.trace.load
reads a trace (merging the ranks' parts first where only they are there)."""

from __future__ import annotations

import gzip
import json
import os
from typing import Any

__all__ = ["read_json", "write_json"]

_GZIP_MAGIC = b"\x1f\x8b"


def read_json(path: str | os.PathLike) -> Any:
    """The JSON object in path, compressed or not (ValueError if it is not JSON)."""
    with open(path, "rb") as source:
        compressed = source.read(2) == _GZIP_MAGIC
    opener = gzip.open if compressed else open
    with opener(path, "rt", encoding="utf-8") as source:
        return json.load(source)


def write_json(path: str, obj: Any) -> None:
    """Write obj to path as compact JSON, gzip-compressed if path ends in ".gz"."""
    temporary = f"{path}.{os.getpid()}.tmp"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(temporary, "wt", encoding="utf-8") as out:
        json.dump(obj, out, separators=(",", ":"))
    os.replace(temporary, path)
