"""Files under a granted folder, resolved once and pinned (real files in a temporary folder):
no link followed at any level, regular files with one name only, and a later read of a file
that is not the one pinned fails instead of reading it."""

import hashlib
import os
import socket

import pytest

from broker.intake import pinned_files
from broker.intake.pinned_files import Changed, Refused

MIB = 1 << 20
ROOT_INODES: dict[str, int] = {}  # each root as it was when resolved


def resolve(root, relative, max_files, max_size=MIB):
    listing = pinned_files.resolve(str(root), relative, max_files, max_size)
    ROOT_INODES[str(root)] = listing.root_inode
    return listing.files


def read(root, pinned, sha256=None):
    return pinned_files.read(str(root), ROOT_INODES[str(root)], pinned, sha256)


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "granted"
    (root / "2025").mkdir(parents=True)
    (root / "2026").mkdir()
    (root / "2025" / "a.csv").write_text("x\n1\n")
    (root / "2026" / "b.csv").write_text("x\n22\n")
    (root / "2026" / ".hidden.csv").write_text("x\n3\n")
    (root / "2026" / "notes.txt").write_text("not data")
    (tmp_path / "outside.csv").write_text("secret\n42\n")
    return root


def paths(found):
    return [pinned.path for pinned in found]


def test_a_file_is_pinned_by_its_inode_size_and_times(root):
    [pinned] = resolve(str(root), "2025/a.csv", 10)
    status = os.stat(root / "2025" / "a.csv")
    assert pinned == pinned_files.Pinned(
        "2025/a.csv", 4, status.st_ino, status.st_mtime_ns, status.st_ctime_ns
    )
    assert read(str(root), pinned) == b"x\n1\n"


def test_patterns_expand_in_every_segment_hidden_files_only_when_named(root):
    assert paths(resolve(str(root), "*/*.csv", 10)) == ["2025/a.csv", "2026/b.csv"]
    assert paths(resolve(str(root), "202[6]/.*.csv", 10)) == ["2026/.hidden.csv"]
    assert paths(resolve(str(root), "*/?.csv", 10)) == ["2025/a.csv", "2026/b.csv"]
    assert resolve(str(root), "2027/*.csv", 10) == []
    assert resolve(str(root), "2025/a.csv/*.csv", 10) == []  # a file is no folder


def test_a_link_is_refused_at_every_level_without_saying_where_it_leads(root, tmp_path):
    (root / "2026" / "out.csv").symlink_to(tmp_path / "outside.csv")
    (root / "up").symlink_to(tmp_path)
    (root / "inside.csv").symlink_to(root / "2025" / "a.csv")  # even to a file under the root
    for relative in ("2026/out.csv", "up/outside.csv", "*/*.csv", "inside.csv"):
        with pytest.raises(Refused, match="is a link") as refused:
            resolve(str(root), relative, 10)
        assert refused.value.kind == "link"
        assert str(tmp_path / "outside.csv") not in str(refused.value)


def test_the_roots_own_links_are_the_administrators(root, tmp_path):
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert paths(resolve(str(alias), "2025/a.csv", 10)) == ["2025/a.csv"]


def test_a_file_with_a_second_name_is_refused(root, tmp_path):
    os.link(tmp_path / "outside.csv", root / "hard.csv")
    with pytest.raises(Refused, match="2 names") as refused:
        resolve(str(root), "hard.csv", 10)
    assert refused.value.kind == "hard-link"


def test_special_files_are_refused_without_being_opened(root):
    os.mkfifo(root / "fifo.csv")  # opening it for reading would wait for a writer
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "socket.csv"))
    (root / "folder.csv").mkdir()
    try:
        for name, kind in (
            ("fifo.csv", "FIFO"),
            ("socket.csv", "socket"),
            ("folder.csv", "folder"),
        ):
            with pytest.raises(Refused, match=f"{kind}.*not a regular file") as refused:
                resolve(str(root), name, 10)
            assert refused.value.kind == "special"
        with pytest.raises(Refused, match=r"fifo\.csv"):
            resolve(str(root), "*.csv", 10)
    finally:
        server.close()


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(root):
    with pytest.raises(
        Refused, match=r"2026/b\.csv holds 5 bytes, more than one file may \(4:"
    ) as refused:
        resolve(str(root), "2026/b.csv", 10, max_size=4)
    assert refused.value.kind == "too-large"


def test_a_resolution_is_bounded(root, monkeypatch):
    for index in range(5):
        (root / f"part-{index}.csv").write_text("x\n1\n")
    with pytest.raises(Refused, match="more than 4 files") as refused:
        resolve(str(root), "part-*.csv", 4)
    assert refused.value.kind == "too-many"
    monkeypatch.setattr(pinned_files, "MAX_ENTRIES", 3)
    with pytest.raises(Refused, match="more than 3 entries"):
        resolve(str(root), "*.csv", 100)


# --- a later read reads the pinned file or fails ----------------------------------------------


@pytest.fixture
def pinned(root):
    [pinned] = resolve(str(root), "2026/b.csv", 10)
    return pinned


def test_a_file_rewritten_in_place_is_not_read(root, pinned):
    path = root / "2026" / "b.csv"
    before = path.stat()
    path.write_text("x\n99\n")  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and its time put back
    with pytest.raises(Changed, match="written to"):
        read(str(root), pinned)


def test_a_file_replaced_is_not_read(root, pinned, tmp_path):
    (root / "2026" / "new.csv").write_text("x\n22\n")
    os.replace(root / "2026" / "new.csv", root / "2026" / "b.csv")
    with pytest.raises(Changed, match="replaced"):
        read(str(root), pinned)


def test_a_file_or_its_folder_swapped_for_a_link_is_not_read(root, pinned, tmp_path):
    path = root / "2026" / "b.csv"
    path.rename(root / "2026" / "kept.csv")
    path.symlink_to(root / "2026" / "kept.csv")  # the same bytes, through a link
    with pytest.raises(Changed, match="now a link"):
        read(str(root), pinned)
    [other] = resolve(str(root), "2025/a.csv", 10)
    (root / "2025").rename(root / "moved")  # a rename changes no file under it
    (root / "2025").symlink_to(root / "moved")
    with pytest.raises(Changed, match="2025 is now a link"):
        read(str(root), other)


def test_a_file_that_gained_a_name_or_became_special_is_not_read(root, pinned, tmp_path):
    path = root / "2026" / "b.csv"
    os.link(path, tmp_path / "second-name.csv")
    with pytest.raises(Changed, match="hard link"):
        read(str(root), pinned)
    (tmp_path / "second-name.csv").unlink()
    path.unlink()
    with pytest.raises(Changed, match="gone"):
        read(str(root), pinned)
    os.mkfifo(path)
    with pytest.raises(Changed, match="FIFO"):
        read(str(root), pinned)  # returns: the FIFO is never opened


def test_a_granted_folder_put_in_the_place_of_the_pinned_one_is_not_read(root, pinned):
    (root.parent / "elsewhere").mkdir()
    (root / "2026").rename(root.parent / "elsewhere" / "2026")  # the same files, moved
    root.rename(root.parent / "old")
    (root.parent / "elsewhere").rename(root)
    with pytest.raises(Changed, match="granted folder was replaced"):
        read(str(root), pinned)


def test_a_read_checks_the_bytes_of_the_first_read(root, pinned):
    digest = hashlib.sha256(b"x\n22\n").hexdigest()
    assert read(str(root), pinned, digest) == b"x\n22\n"
    with pytest.raises(Changed, match="other bytes"):
        read(str(root), pinned, "0" * 64)
