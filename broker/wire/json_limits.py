"""JSON a client sends, bounded before it is parsed: how deep it nests, how long a number is.

Python's parser recurses once per nesting level, so a body of ten thousand ``[`` raises
``RecursionError``; and ``int()`` refuses a literal of more than 4,300 digits with a
``ValueError`` (CPython's guard against quadratic conversion, ``sys.set_int_max_str_digits``).
Neither is a ``JSONDecodeError``, so each one escaped the handlers as a 500 (or FastAPI's
vague 400). No request of this API needs more than a few levels or a number of more than a few
dozen characters, so JSON deeper than :data:`MAX_DEPTH` or holding a number literal longer than
:data:`MAX_NUMBER_CHARS` is refused before the parser sees it, with words that never repeat it.

Every JSON text the services parse from a client goes through here, in one of two ways:

- request bodies (``application/json``, ``*+json``) through
  :class:`broker.wire.problems.JsonBodyLimits`, installed with the problem handlers: a body over
  a bound is a 422 problem, whatever the route;
- JSON carried in a form field or a file (the queries of an aggregate release, a JSON dataset)
  through :func:`loads`, which raises :class:`JsonTooComplex` (a ``ValueError``) for its
  caller to answer in its own words.

The check is linear and vectorized: strings are cut out with one regular expression (their
content is never measured), then the depth is the running sum of opening and closing brackets.
Pure: no web code (the aggregate queries and the dataset readers use it).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

MAX_DEPTH = 32  # levels of arrays and objects, the outermost counted
MAX_NUMBER_CHARS = 100  # characters of one number literal (sign, digits, point, exponent)

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NUMBER = re.compile(rb"[-+0-9.eE]{%d,}" % (MAX_NUMBER_CHARS + 1))
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


class JsonTooComplex(ValueError):
    """JSON nested deeper than :data:`MAX_DEPTH` or with a number longer than
    :data:`MAX_NUMBER_CHARS`; the message says which, never what the text holds."""


def check(text: bytes | str) -> None:
    """Raise :class:`JsonTooComplex` when ``text`` nests or spells a number beyond the bounds
    (it need not be valid JSON: the parser says what else is wrong).

    Examples
    --------
    >>> check('[{"a": [1, 2]}, "[[[[[[[["]')
    >>> check("[" * 40 + "]" * 40)
    Traceback (most recent call last):
    ...
    broker.wire.json_limits.JsonTooComplex: the JSON is nested 40 levels deep; at most 32 are read
    >>> check("1" * 5000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    broker.wire.json_limits.JsonTooComplex: the JSON holds a number of more than 100 characters...
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    outside = _STRING.sub(b'""', data)
    steps = _OPEN[np.frombuffer(outside, dtype=np.uint8)]
    depth = int(np.cumsum(steps, dtype=np.int64).max(initial=0))
    if depth > MAX_DEPTH:
        raise JsonTooComplex(
            f"the JSON is nested {depth:,} levels deep; at most {MAX_DEPTH} are read"
        )
    if _NUMBER.search(outside):
        raise JsonTooComplex(
            f"the JSON holds a number of more than {MAX_NUMBER_CHARS} characters; no field of "
            "this API takes one that long"
        )


def loads(text: bytes | str, **options: Any) -> Any:
    """``json.loads(text, **options)`` after :func:`check`: :class:`JsonTooComplex` for JSON
    over the bounds, ``json.JSONDecodeError`` (a ``ValueError`` too) for text that is not JSON."""
    check(text)
    return json.loads(text, **options)
