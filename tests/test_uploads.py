"""The spool copy of an upload: hashed while copied, in chunks, never half-written."""

import hashlib
import io

import pytest

from broker.intake.uploads import CHUNK, adopt, discard, receive


def test_a_copy_larger_than_a_chunk_is_whole_and_hashed(tmp_path):
    data = bytes(range(256)) * (CHUNK // 256 * 3 + 7)  # three chunks and a bit
    upload = receive(io.BytesIO(data), tmp_path / "spool", "x.csv", "text/csv")
    assert upload.read_bytes() == data
    assert (upload.size, upload.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    kept = adopt(upload, tmp_path / "jobs" / "one")
    discard(upload)  # the request's cleanup: the job's copy stays
    assert kept.read_bytes() == data and not upload.path.exists()
    discard(kept)
    assert not list((tmp_path / "spool").iterdir()) and not kept.path.exists()


class Broken(io.RawIOBase):
    """A client that disconnects in the middle of its upload."""

    def __init__(self):
        self.calls = 0

    def readinto(self, buffer):
        self.calls += 1
        if self.calls > 2:
            raise ConnectionResetError("client went away")
        buffer[:4] = b"a,b\n"
        return 4

    def readable(self):
        return True


def test_an_interrupted_copy_leaves_nothing_behind(tmp_path):
    with pytest.raises(ConnectionResetError):
        receive(Broken(), tmp_path, "x.csv", None)
    assert not list(tmp_path.iterdir())
