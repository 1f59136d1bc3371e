"""Reading JSON and JSON Lines files, gzip-compressed or not: the one reader of the package.

Compression is detected by magic bytes, never by the file name; a file is parsed as one JSON
value first, then as JSON Lines, and an error names the file and, for JSON Lines, the line.

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.jsonl"
    >>> _ = path.write_text('["a", "b"]\\n["b", "c"]\\n')
    >>> read_records(path)
    [['a', 'b'], ['b', 'c']]
    >>> _ = path.write_text('["a", "b"]\\n["b", \\n')
    >>> read_records(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../pairs.jsonl is neither JSON (...) nor JSON Lines (line 2: ...)
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

_GZIP_MAGIC = b"\x1f\x8b"
_LINE_END = re.compile(r"\r\n|\r|\n")


def read_json(path: str | os.PathLike[str], *, what: str = "file") -> Any:
    """The JSON value of ``path``, or the list of its JSON Lines values.

    Raises:
        FileNotFoundError: ``path`` is not a file (``what`` names it: "dataset file", ...).
        ValueError: the file is empty, a broken gzip stream, not UTF-8, or neither JSON nor
            JSON Lines (the first bad line is named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    raw = path.read_bytes()
    try:
        if raw[:2] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not readable as (gzip-compressed) UTF-8 text: {exc}") from None
    if not text.strip():
        raise ValueError(f"{path} is empty; expected JSON or JSON Lines records")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        values = []
        for lineno, line in json_lines(text):
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError as line_exc:
                raise ValueError(
                    f"{path} is neither JSON ({exc.msg}) nor JSON Lines "
                    f"(line {lineno}: {line_exc.msg})"
                ) from None
        return values


def json_lines(text: str) -> list[tuple[int, str]]:
    """The non-blank lines of a JSON Lines text with their 1-based numbers. A line ends at
    ``\\n``, ``\\r\\n`` or ``\\r`` (which a JSON string holds only escaped), never at U+2028,
    U+2029 or U+0085, which a JSON string may hold as they are
    (``json.dumps(..., ensure_ascii=False)`` writes them so) and :meth:`str.splitlines`
    would take for line ends.

    >>> json_lines('"a\\u2028b"\\r\\n\\n"c"\\r"d"')
    [(1, '"a\\u2028b"'), (3, '"c"'), (4, '"d"')]
    """
    return [(n, line) for n, line in enumerate(_LINE_END.split(text), start=1) if line.strip()]


def read_records(path: str | os.PathLike[str], *, what: str = "file") -> list[Any]:
    """The records of ``path``: a JSON list, JSON Lines, or one JSON object as a single
    record; ``ValueError`` when there are none or the file holds another JSON value."""
    data = read_json(path, what=what)
    records = [data] if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(f"{path} must hold a JSON list or JSON Lines of records")
    if not records:
        raise ValueError(f"{path} holds no records (empty list)")
    return records
