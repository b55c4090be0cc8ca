"""Text in another encoding than UTF-8 (Latin-1 and Windows-1252 spreadsheet exports), made UTF-8.

The canonical reading is UTF-8 (:mod:`broker.datasets.reading`). A file a person says is in
another encoding is decoded with it, strictly (a byte the encoding does not define is an error
naming its offset, never a silent replacement character), and re-encoded as UTF-8 before it is
read: in memory for the in-memory reader, into a temporary copy for an out-of-core engine, which
reads the file itself. What the broker writes is always UTF-8.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from broker.datasets.dataset import DatasetError

UTF8 = "utf-8"
CHUNK_BYTES = 1 << 20


def text_encoding(name: str) -> str:
    """The canonical name of the text encoding ``name`` (``latin1`` -> ``iso8859-1``).

    Raises
    ------
    ValueError
        Not an encoding Python knows, or a codec that is not text (``base64``, ``zlib``).

    Examples
    --------
    >>> text_encoding("CP1252"), text_encoding("latin-1"), text_encoding("utf8")
    ('cp1252', 'iso8859-1', 'utf-8')
    """
    try:
        b"a".decode(name)  # refuses codecs that are not bytes to text, which lookup finds
    except UnicodeDecodeError:  # one byte is no UTF-16 text, but UTF-16 is an encoding
        pass
    except LookupError:
        raise ValueError(
            f"unknown text encoding {name!r}: give one such as utf-8, latin-1 or cp1252"
        ) from None
    return codecs.lookup(name).name


def to_utf8(data: bytes, encoding: str, label: str) -> bytes:
    """``data``, text in ``encoding``, as UTF-8.

    Examples
    --------
    >>> to_utf8("Sébastien,Zürich\\n".encode("cp1252"), "cp1252", "a.csv").decode()
    'Sébastien,Zürich\\n'
    """
    if codecs.lookup(encoding).name == UTF8:
        return data
    try:
        return data.decode(encoding).encode(UTF8)
    except UnicodeDecodeError as error:
        raise _not_text(label, encoding, error.start, data[error.start]) from None


def utf8_copy(source: Path, target: Path, encoding: str) -> None:
    """Write ``source``, text in ``encoding``, to ``target`` as UTF-8, a chunk at a time."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    offset = 0
    with source.open("rb") as read, target.open("wb") as write:
        while True:
            chunk = read.read(CHUNK_BYTES)
            try:
                write.write(decoder.decode(chunk, final=not chunk).encode(UTF8))
            except UnicodeDecodeError as error:
                # error.object is the decoder's few buffered bytes, then this chunk.
                at = offset - (len(error.object) - len(chunk)) + error.start
                raise _not_text(str(source), encoding, at, error.object[error.start]) from None
            if not chunk:
                return
            offset += len(chunk)


def _not_text(label: str, encoding: str, at: int, byte: int) -> DatasetError:
    return DatasetError(f"{label} is not valid {encoding} text (byte {at}: 0x{byte:02X})")
