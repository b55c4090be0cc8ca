"""An independent judge of what reached the destination: plain pandas/pyarrow, no broker code.

It reads the delivered bytes the way the destination (or an attacker there) would, by the
delivery's ``content-type``, and lists every way they could identify someone:

(a) a column whose name, normalized (NFKC, Cyrillic/Greek look-alikes mapped, zero-width/format
    characters removed, case-folded, trimmed), is ``nin``;
(b) an identifier: a column whose values are all distinct (2 rows or more);
(c) for columns an attacker knows about the people (``known``), an equivalence class of fewer
    than ``k`` rows (or of fewer than ``k`` distinct people when a ``person`` column is given);
(d) any original identifying value (``secrets``: e-mails, phone numbers, national ids) anywhere
    in the bytes: raw bytes, parsed cells, the index, Parquet dictionaries and metadata; numeric
    secrets also as numbers inside cells ("[771234567, 779999999]" reveals 771234567);
(e) for Parquet, pandas index metadata or schema columns beyond the table's.

``verdict`` returns the list of problems (empty: the judge accepts the bytes).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


# Letters that look like Latin ones but that NFKC keeps apart (a small confusables table, enough
# for the spellings of "NIN" an attacker would try).
CONFUSABLES = str.maketrans(
    {
        "\u039d": "N",  # GREEK CAPITAL LETTER NU
        "\u0399": "I",  # GREEK CAPITAL LETTER IOTA
        "\u03b9": "i",  # GREEK SMALL LETTER IOTA
        "\u0406": "I",  # CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I
        "\u0456": "i",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
        "\u04c0": "I",  # CYRILLIC LETTER PALOCHKA
        "\u0274": "N",  # LATIN LETTER SMALL CAPITAL N
        "\u026a": "I",  # LATIN LETTER SMALL CAPITAL I
        "\u0131": "i",  # LATIN SMALL LETTER DOTLESS I
    }
)


def normalize_name(name: object) -> str:
    """NFKC, look-alike letters mapped, zero-width/format characters (category Cf, soft hyphen
    included) removed, case-folded, trimmed."""
    text = unicodedata.normalize("NFKC", str(name)).translate(CONFUSABLES)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return unicodedata.normalize("NFKC", text).casefold().strip()


def kind(content_type: str) -> str:
    content_type = (content_type or "").split(";")[0].strip().lower()
    if content_type == "text/csv":
        return "csv"
    if content_type == "application/json":
        return "json"
    if "parquet" in content_type:
        return "parquet"
    raise ValueError(f"unexpected delivery content-type {content_type!r}")


def parse(content_type: str, body: bytes) -> pd.DataFrame:
    """The delivered table as the destination reads it."""
    fmt = kind(content_type)
    if fmt == "csv":
        if not body.strip():  # every column dropped: nothing to read
            return pd.DataFrame()
        return pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False)
    if fmt == "json":
        return pd.DataFrame(json.loads(body))
    return pd.read_parquet(io.BytesIO(body))


def _key(value: object) -> tuple[str, str]:
    """A hashable spelling that keeps what a reader can tell apart (1, "1", 1.0, True differ)."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan", "nan")
    if value is None or value is pd.NaT or value is pd.NA:
        return ("null", "null")
    return (type(value).__name__, repr(value))


def keyed(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {c: frame[c].astype(object).map(_key).map(str) for c in frame.columns}, index=frame.index
    )


def forbidden_names(frame: pd.DataFrame) -> list[str]:
    return [
        f"(a) forbidden attribute: column {c!r} is 'NIN' once normalized"
        for c in frame.columns
        if normalize_name(c) == "nin"
    ]


def identifiers(frame: pd.DataFrame) -> list[str]:
    if len(frame) < 2:
        return []
    k = keyed(frame)
    return [
        f"(b) identifier: every one of the {len(frame)} values of column {c!r} is distinct"
        for c in frame.columns
        if k[c].nunique(dropna=False) == len(frame)
    ]


def smallest_class(
    frame: pd.DataFrame, known: Sequence[str], person: str | None = None
) -> tuple[int, dict]:
    """(size, an example class) of the smallest class over ``known`` (people, with ``person``)."""
    cols = [c for c in known if c in frame.columns]
    if len(frame.columns) == 0:  # nothing delivered about anyone
        return (sys.maxsize, {})
    if not cols:  # one class: the whole table
        return (len(frame) if person is None else frame[person].nunique(), {})
    k = keyed(frame[cols])
    if person is not None:
        k["__person__"] = frame[person].astype(str).to_numpy()
        sizes = k.groupby(cols, dropna=False)["__person__"].nunique()
    else:
        sizes = k.groupby(cols, dropna=False).size()
    where = sizes.idxmin()
    where = where if isinstance(where, tuple) else (where,)
    members = (k[cols] == pd.Series(where, index=cols)).all(axis=1)
    example = frame.loc[members[members].index[0], cols].to_dict()
    return int(sizes.min()), example


def k_anonymity(
    frame: pd.DataFrame, known: Sequence[str], k: int = 3, person: str | None = None
) -> list[str]:
    size, example = smallest_class(frame, known, person)
    if size >= k:
        return []
    what = "distinct people" if person else "rows"
    cols = [c for c in known if c in frame.columns]
    return [f"(c) k < {k}: the class {example} over {cols} has {size} {what}"]


def _texts(content_type: str, body: bytes, frame: pd.DataFrame | None) -> list[bytes]:
    """Every place a value can hide: raw bytes and, once parsed, cells, index and metadata."""
    texts = [body]
    if frame is not None:
        cells = [str(c) for c in frame.columns]
        cells += [str(v) for v in frame.index]
        for column in frame.columns:
            cells += [str(v) for v in frame[column].tolist()]
        texts.append("\n".join(cells).encode("utf-8", "surrogatepass"))
    if kind(content_type) == "parquet":
        try:
            metadata = pq.read_metadata(io.BytesIO(body))
            for key, value in (metadata.metadata or {}).items():
                texts.append(key + b"\n" + value)
            table = pq.read_table(
                io.BytesIO(body), read_dictionary=pq.read_schema(io.BytesIO(body)).names
            )
            for column in table.columns:
                for chunk in column.chunks:
                    if pa.types.is_dictionary(chunk.type):  # unused entries hide here
                        texts.append(
                            "\n".join(str(v) for v in chunk.dictionary.to_pylist()).encode()
                        )
        except (pa.ArrowException, OSError, ValueError) as error:
            texts.append(f"unreadable parquet: {error}".encode())
    return texts


def leaked_secrets(
    content_type: str, body: bytes, secrets: Iterable[object], frame: pd.DataFrame | None = None
) -> list[str]:
    secrets = list(secrets)
    if not secrets:
        return []
    texts = _texts(content_type, body, frame)
    numbers: set[float] = set()
    for text in texts:
        for token in NUMBER.findall(text):
            with contextlib.suppress(ValueError):
                numbers.add(float(token))
    found = []
    for secret in secrets:
        needle = str(secret).encode()
        if any(needle in text for text in texts):
            found.append(f"(d) original identifying value {secret!r} is in the delivered bytes")
        elif isinstance(secret, int | float) and float(secret) in numbers:
            found.append(f"(d) original identifying value {secret!r} is in the delivered numbers")
    return found


def parquet_extras(body: bytes, frame: pd.DataFrame) -> list[str]:
    problems = []
    schema = pq.read_schema(io.BytesIO(body))
    extra = [n for n in schema.names if n not in list(frame.columns)]
    extra += [n for n in schema.names if n.startswith("__index_level_")]
    if extra:
        problems.append(f"(e) Parquet schema has columns beyond the table's: {sorted(set(extra))}")
    pandas_meta = (schema.metadata or {}).get(b"pandas")
    if pandas_meta:
        meta = json.loads(pandas_meta)
        real = [i for i in meta.get("index_columns", []) if not isinstance(i, dict)]
        if real:
            problems.append(f"(e) Parquet pandas metadata keeps index columns {real}")
        names = {c.get("name") for c in meta.get("columns", [])} - {None, *frame.columns}
        if names:
            problems.append(f"(e) Parquet pandas metadata names columns {sorted(map(str, names))}")
    if not isinstance(frame.index, pd.RangeIndex):
        problems.append(f"(e) Parquet restores a {type(frame.index).__name__} index")
    return problems


def verdict(
    headers: dict[str, str],
    body: bytes,
    *,
    known: Sequence[str] | None = None,
    known_sets: Sequence[Sequence[str]] = (),
    secrets: Iterable[object] = (),
    person: str | None = None,
    k: int = 3,
) -> list[str]:
    """Every problem the judge finds in one delivery (``headers`` as the inbox received them).

    ``known``/``known_sets``: attacker-known columns for (c); only those still present count.
    """
    content_type = headers.get("content-type", "")
    try:
        frame = parse(content_type, body)
    except Exception as error:
        return [f"the delivery cannot be read as {content_type!r}: {error}"]
    problems = forbidden_names(frame) + identifiers(frame)
    for cols in ([known] if known is not None else []) + list(known_sets):
        problems += k_anonymity(frame, cols, k, person if person in frame.columns else None)
    problems += leaked_secrets(content_type, body, secrets, frame)
    if kind(content_type) == "parquet":
        problems += parquet_extras(body, frame)
    return problems


# --- people behind a class, and identifying precision (rows are not people) ---------------------
#
# What the recipient can learn when it knows a person's values (``known``) and that the person is
# in the data: the delivered rows whose labels cover those values. The judge knows who each row
# of the data as sent is (``person``, a column of ``original`` that was never sent), so it counts
# the people whose values a delivered class covers: a class that covers fewer than k people
# hands the recipient those people's rows, and every sensitive value in them.

_NUMERIC = re.compile(r"[-+]?\d+(?:\.\d+)?")
_ISO_DAY = re.compile(r"(\d{4})-(\d{1,2})(?:-(\d{1,2}))?(?:[T ].*)?")
_DAY_FIRST = re.compile(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})(?:[T ].*)?")
_LABEL_RANGE = re.compile(r"(-?\d+(?:\.\d+)?)-(-?\d+(?:\.\d+)?)")


def _plain(value: object) -> str:
    return unicodedata.normalize("NFKC", str(value)).strip()


def _number(value: object) -> float | None:
    match = _NUMERIC.match(_plain(value))
    return float(match.group()) if match else None


_COMPACT_DAY = re.compile(r"(1[89]\d\d|20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])")
_SHORT_YEAR = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2})")
_NAMED_MONTH = re.compile(r"(\d{1,2}) ?[-. ] ?([^\W\d_]+)\.? ?[-. ] ?(\d{4})")
# Month names a recipient reads (English and French, as written in the tests' tables).
_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january", "janvier"),
            ("feb", "february", "fevrier", "février"),
            ("mar", "march", "mars"),
            ("apr", "april", "avril"),
            ("may", "mai"),
            ("jun", "june", "juin"),
            ("jul", "july", "juillet"),
            ("aug", "august", "août", "aout"),
            ("sep", "september", "septembre"),
            ("oct", "october", "octobre"),
            ("nov", "november", "novembre"),
            ("dec", "december", "décembre", "decembre"),
        ],
        start=1,
    )
    for name in names
}


def _date(value: object) -> tuple[int, int | None, int | None] | None:
    """(year, month, day) of a date written ISO-style, day first (with a four- or two-digit
    year), ``19500301``, or ``1 Mar 1950`` / ``3 mars 1950``; None otherwise."""
    text = _plain(value)
    if match := _ISO_DAY.fullmatch(text):
        day = match.group(3)
        return int(match.group(1)), int(match.group(2)), int(day) if day else None
    if match := _DAY_FIRST.fullmatch(text):
        return int(match.group(3)), int(match.group(2)), int(match.group(1))
    if match := _COMPACT_DAY.fullmatch(text):
        return int(match.group(1)), int(match.group(2)), int(match.group(3))
    if match := _SHORT_YEAR.fullmatch(text):
        return 1900 + int(match.group(3)), int(match.group(2)), int(match.group(1))
    if (match := _NAMED_MONTH.fullmatch(text)) and match.group(2).lower() in _MONTHS:
        return int(match.group(3)), _MONTHS[match.group(2).lower()], int(match.group(1))
    return None


def covers(label: object, value: object) -> bool:
    """Whether a delivered cell (a value or a generalization label) holds an original value,
    read the way a recipient would: equal, ``*``, a set ``"a, b"``, a mask ``"750*"``, a range
    ``"30-40"`` (of numbers or years), ``"90+"``, a year or a month of a date."""
    text = _plain(label)
    if text == "*" or text == _plain(value):
        return True
    if ", " in text:
        return any(covers(part, value) for part in text.split(", "))
    compact = re.sub(r"\s", "", _plain(value)).upper()
    if text.endswith("*"):
        return compact.startswith(re.sub(r"\s", "", text[:-1]).upper())
    date = _date(value)
    if re.fullmatch(r"\d{4}", text) and date is not None:
        return date[0] == int(text)
    if (match := re.fullmatch(r"(\d{4})-(\d{2})", text)) and date is not None:
        return (date[0], date[1]) == (int(match.group(1)), int(match.group(2)))
    if match := re.fullmatch(r"(\d+)\+", text):
        number = _number(value)
        return number is not None and number >= int(match.group(1))
    if match := (_LABEL_RANGE.fullmatch(text) or re.fullmatch(r"(\d{4})/(\d{4})", text)):
        low, high = float(match.group(1)), float(match.group(2))
        number = date[0] if date is not None else _number(value)
        return number is not None and low <= number <= high
    number, written = _number(value), _number(text)
    return number is not None and written is not None and number == written and "-" not in text


def people_behind(
    frame: pd.DataFrame,
    original: pd.DataFrame,
    known: Sequence[str],
    person: str,
    k: int = 3,
) -> list[str]:
    """(f) Every delivered class over ``known`` must cover the values of at least ``k`` people
    of ``original`` (who each row is: its ``person`` column)."""
    cols = [c for c in known if c in frame.columns]
    if not cols or frame.empty:
        return []
    people = original.drop_duplicates([person, *cols])
    lonely = []
    for labels, _rows in frame.groupby(cols, dropna=False).size().items():
        labels = labels if isinstance(labels, tuple) else (labels,)
        held = pd.Series(True, index=people.index)
        for column, label in zip(cols, labels, strict=True):
            verdicts = {v: covers(label, v) for v in people[column].unique()}
            held &= people[column].map(verdicts).astype(bool)
        crowd = people.loc[held, person].nunique()
        if crowd < k:
            lonely.append((dict(zip(cols, labels, strict=True)), crowd))
    if not lonely:
        return []
    example, crowd = lonely[0]
    return [
        f"(f) {len(lonely)} class(es) over {cols} hold the rows of fewer than {k} people of the "
        f"data sent (e.g. {example}: {crowd}): a recipient who knows a person's {cols} reads "
        "every value of their rows"
    ]


def precision(
    frame: pd.DataFrame,
    dates: Sequence[str] = (),
    postcodes: Sequence[str] = (),
    ages: Sequence[str] = (),
    postcode_characters: int = 3,
    max_age: int = 89,
    births: Sequence[str] = (),
) -> list[str]:
    """(g) Identifying precision, as HIPAA's Safe Harbor draws it: no date finer than its year,
    no postcode beyond its first ``postcode_characters``, no age over ``max_age`` (but as one
    top category, ``"90+"``, or in a range that starts at or below it)."""
    problems = []

    def cells(column: str) -> list[str]:
        found = []
        for value in frame[column].dropna().astype(str):
            found += [part for part in _plain(value).split(", ") if part]
        return found

    for column in (c for c in dates if c in frame.columns):
        fine = [v for v in cells(column) if (d := _date(v)) is not None and d[1] is not None]
        if fine:
            problems.append(f"(g) {column!r} delivers {len(fine)} dates finer than a year")
    for column in (c for c in postcodes if c in frame.columns):
        long = [v for v in cells(column) if len(re.sub(r"[\s*]", "", v)) > postcode_characters]
        if long:
            problems.append(
                f"(g) {column!r} delivers {len(long)} postcodes longer than "
                f"{postcode_characters} characters"
            )
    for column in (c for c in ages if c in frame.columns):
        old = []
        for value in cells(column):
            if re.fullmatch(r"\d+\+", value):
                continue
            # A range tells an old age apart only when it starts above the cap: one that
            # starts below mixes the old with younger people.
            ends = _LABEL_RANGE.fullmatch(value)
            told = float(ends.group(1)) if ends else _number(value)
            if told is not None and told >= max_age + 1:
                old.append(value)
        if old:
            problems.append(f"(g) {column!r} delivers {len(old)} ages over {max_age}")
    # Birth years that tell an age over the cap ("all elements of dates (including year)
    # indicative of such age"), unless one category holds every older year (it starts before
    # 1900: nobody alive was born then).
    last = datetime.date.today().year - (max_age + 1)
    for column in (c for c in births if c in frame.columns):
        told = []
        for value in cells(column):
            span = re.fullmatch(r"(\d{4}) ?[/-] ?(\d{4})", value)
            date = _date(value) or (
                (int(value), None, None) if re.fullmatch(r"\d{4}", value) else None
            )
            if span:
                low, high = int(span[1]), int(span[2])
            elif date:
                low = high = date[0]
            else:
                continue
            if high <= last and low >= 1900:
                told.append(value)
        if told:
            problems.append(
                f"(g) {column!r} delivers {len(told)} birth years of people over {max_age}"
            )
    return problems
