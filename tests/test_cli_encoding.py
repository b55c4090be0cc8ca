"""``--encoding``: Latin-1 and Windows-1252 exports read as the same text as their UTF-8 twin.

The check is independent of the code under test: each file is the UTF-8 table re-encoded by
Python's codecs, and the report of the re-encoded file must equal the UTF-8 file's, engine by
engine; a byte the encoding does not define is named by the offset Python's own decoder gives.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from broker.datasets.encodings import CHUNK_BYTES

# Characters cp1252 and Latin-1 encode differently (the euro sign and curly quotes exist only in
# cp1252, at 0x80-0x9F where Latin-1 has control characters), and accented letters both share.
TEXT = (
    "name,city,note\nSébastien,Zürich,€ 5\nRenée,Besançon,“ok”\nRenée,Besançon,“ok”\nÅse,Tromsø,–\n"
)


def run(*args: str, tmp: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"TMPDIR": str(tmp)} if tmp else {})}
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def report(path: Path, *options: str, tmp: Path | None = None) -> dict:
    result = run("analyze", str(path), "--format", "json", *options, tmp=tmp)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    document.pop("notes")
    return document


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_cp1252_export_reads_as_its_utf8_twin(tmp_path, engine):
    twin, export = tmp_path / "utf8.csv", tmp_path / "export.csv"
    twin.write_bytes(TEXT.encode("utf-8"))
    export.write_bytes(TEXT.encode("cp1252"))
    spool = tmp_path / "spool"
    spool.mkdir()
    expected = report(twin, "--engine", engine, "--qi", "city")
    got = report(export, "--engine", engine, "--qi", "city", "--encoding", "cp1252", tmp=spool)
    assert got == expected
    assert [a["name"] for a in got["attributes"]] == ["name", "city", "note"]
    assert list(spool.iterdir()) == []  # the UTF-8 copy DuckDB read is gone


def test_latin1_text_and_utf16_json(tmp_path):
    latin = "name,city\nSébastien,Zürich\nÅse,Tromsø\n"
    utf8, export = tmp_path / "utf8.csv", tmp_path / "latin.csv"
    utf8.write_bytes(latin.encode("utf-8"))
    export.write_bytes(latin.encode("latin-1"))
    assert report(export, "--encoding", "latin-1") == report(utf8)
    records = [{"name": "Renée", "age": 30}, {"name": "Åse", "age": 41}]
    as_json, utf16 = tmp_path / "people.json", tmp_path / "people16.json"
    as_json.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    utf16.write_bytes(json.dumps(records, ensure_ascii=False).encode("utf-16"))  # with a BOM
    assert report(utf16, "--encoding", "utf-16") == report(as_json)


def test_a_non_utf8_file_without_encoding_says_what_to_give(tmp_path):
    export = tmp_path / "export.csv"
    export.write_bytes(TEXT.encode("cp1252"))
    result = run("analyze", str(export))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "not valid UTF-8" in result.stderr and "--encoding cp1252" in result.stderr


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_byte_the_encoding_lacks_is_named_where_it_is(tmp_path, engine):
    # 0x81 is undefined in cp1252; put it past the first chunk a copy decodes at a time.
    head = ("a,b\n" + "é,1\n" * (CHUNK_BYTES // 3)).encode("cp1252")
    data = head + b"\x81x,2\n"
    bad = tmp_path / "bad.csv"
    bad.write_bytes(data)
    with pytest.raises(UnicodeDecodeError) as expected:
        data.decode("cp1252")
    result = run("analyze", str(bad), "--encoding", "cp1252", "--engine", engine)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert f"is not valid cp1252 text (byte {expected.value.start}: 0x81)" in result.stderr


@pytest.mark.parametrize("name", ["klingon", "rot13", "base64", "zlib"])
def test_only_text_encodings_are_taken(tmp_path, name):
    result = run("analyze", str(tmp_path / "any.csv"), "--encoding", name)
    assert result.returncode == 2
    assert f"unknown text encoding {name!r}" in result.stderr


def test_anonymize_reads_cp1252_and_writes_utf8(tmp_path):
    source, out = tmp_path / "export.csv", tmp_path / "out.csv"
    rows = "".join(f"{city},{age}\n" for city in ("Zürich", "Besançon") for age in range(20, 26))
    source.write_bytes(("city,age\n" + rows).encode("cp1252"))
    result = run(
        *("anonymize", str(source), "--qi", "city,age", "-k", "2", "--encoding", "cp1252"),
        *("-o", str(out)),
    )
    assert result.returncode == 0, result.stderr
    written = pd.read_csv(out, encoding="utf-8", dtype=str)
    assert set(written["city"]) == {"Zürich", "Besançon"}
