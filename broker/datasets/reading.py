"""Read an uploaded or local dataset (CSV, JSON array of records, Parquet) into its canonical table.

The canonical table is what the broker measures *and* what it delivers: the writer in
:mod:`broker.datasets.writing` serializes exactly these values, so anything a file format can carry
besides them (a Parquet index or file metadata, unused dictionary entries, a second spelling of a
value such as ``"F"`` quoted and unquoted, ``1`` and ``1.0``, ``0.0`` and ``-0.0``) is dropped
here and never reaches a destination. The rules, by format:

- **CSV**: every value is text as written (``"007"`` is not ``7``); an empty field is the
  category ``""``. UTF-8 (a leading BOM is dropped), or text in an encoding the caller names,
  made UTF-8 first (:mod:`broker.datasets.encodings`); the delimiter is sniffed among
  ``, ; tab |``.
- **JSON** (an array of flat objects): a key missing from a record is a missing value. Per column,
  values of one JSON type keep it (text; integers; numbers, written as floats once one float is
  present, with ``-0.0`` as ``0.0``; booleans); a column mixing types becomes text
  (``1 -> "1"``, ``true -> "true"``) and the dataset's notes say so. Duplicate keys in an object,
  ``NaN`` and ``Infinity`` (not JSON) and nested values are refused.
- **Parquet**: file and pandas metadata are ignored (an index stored by pandas is an ordinary
  column, measured like the others); dictionary-encoded columns are decoded; integer and boolean
  columns keep their type (nullable), floats turn ``-0.0`` into ``0.0`` and ``NaN`` into missing;
  nested types are refused.

Column names: two names with one :func:`broker.columns.names.attribute_key` (case, look-alike
letters, invisible characters) are refused, as are names with control characters
(:mod:`broker.datasets.column_names`).

Every malformed input raises :class:`DatasetError` with a one-line message; input over a
:class:`ReadLimits` bound (:mod:`broker.datasets.limits`) raises :class:`DatasetTooLarge`.
Callers turn them into exit status 2 (CLI) or a 422 / 413 problem (API). Each format has its
reader module: :mod:`~broker.datasets.csv_reader`, :mod:`~broker.datasets.json_reader`,
:mod:`~broker.datasets.parquet_reader`.
"""

from __future__ import annotations

from pathlib import Path

from broker.datasets.column_names import check_column_names
from broker.datasets.csv_reader import read_csv
from broker.datasets.dataset import CSV, FORMATS, JSON, PARQUET, Dataset, DatasetError
from broker.datasets.encodings import UTF8, to_utf8
from broker.datasets.json_reader import read_json
from broker.datasets.limits import ReadLimits, check_size
from broker.datasets.parquet_reader import PARQUET_MAGIC, read_parquet

_EXTENSIONS = {
    ".csv": CSV,
    ".tsv": CSV,
    ".txt": CSV,
    ".json": JSON,
    ".parquet": PARQUET,
    ".pq": PARQUET,
}
_READERS = {CSV: read_csv, JSON: read_json, PARQUET: read_parquet}


def detect_format(name: str | None, head: bytes) -> str:
    """The format named by the file's extension, else guessed from its first bytes."""
    suffix = Path(name or "").suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if suffix and suffix not in ("", ".dat"):
        raise DatasetError(f"Unsupported file type {suffix!r}: send CSV, JSON or Parquet")
    if head.startswith(PARQUET_MAGIC):
        return PARQUET
    if head.lstrip()[:1] in (b"[", b"{"):
        return JSON
    return CSV


def read_dataset(
    data: bytes,
    name: str | None = None,
    data_format: str | None = None,
    limits: ReadLimits | None = None,
    encoding: str = UTF8,
) -> Dataset:
    """Parse ``data`` (the file's bytes) as ``data_format`` or the format its name implies.

    CSV and JSON text in another ``encoding`` than UTF-8 is made UTF-8 first
    (:mod:`broker.datasets.encodings`); Parquet says its own.

    Raises
    ------
    DatasetError
        Empty file, header only, ragged rows, bad UTF-8, duplicate or look-alike column names,
        a file that is not what its name says, nested JSON values.
    DatasetTooLarge
        More columns, cells or decoded bytes than ``limits`` allow.

    Examples
    --------
    >>> dataset = read_dataset(b'[{"age": 30, "sex": "F"}, {"age": 41.5, "sex": "M"}]', "a.json")
    >>> dataset.format, dataset.frame["age"].tolist()
    ('json', [30.0, 41.5])
    """
    label = name or "the dataset"
    limits = limits or ReadLimits()
    if not data.strip():
        raise DatasetError(f"{label} is empty")
    named = data_format
    data_format = named or detect_format(name, data[:16])
    if data_format not in FORMATS:
        raise DatasetError(f"Unknown format {data_format!r}: use one of {', '.join(FORMATS)}")
    if data_format != PARQUET and encoding != UTF8:
        data = to_utf8(data, encoding, label)
        data_format = named or detect_format(name, data[:16])  # UTF-16 JSON starts with a BOM
    dataset = _READERS[data_format](data, label, limits)
    frame = dataset.frame
    if len(frame.columns) == 0:
        raise DatasetError(f"{label} has no columns")
    if len(frame) == 0:
        raise DatasetError(f"{label} has a header but no data rows")
    check_column_names(list(frame.columns), label)
    check_size(len(frame), len(frame.columns), label, limits)
    return dataset


def read_path(path: str | Path, limits: ReadLimits | None = None, encoding: str = UTF8) -> Dataset:
    """Read a dataset file from disk, with the same errors as :func:`read_dataset`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path} is a folder, not a dataset file") from None
    except OSError as error:
        raise DatasetError(f"{path}: {error.strerror}") from None
    return read_dataset(data, str(path), limits=limits, encoding=encoding)
