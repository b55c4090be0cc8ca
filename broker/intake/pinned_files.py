"""Files under a granted folder, resolved once and pinned: what was checked is what is read.

A member names files under a folder an administrator granted it (its *root*), with glob
patterns (``*``, ``?``, ``[...]``) in any segment. :func:`resolve` turns that into a fixed list
of regular files, once; :func:`read` reads one of them later, and only if it is still the file
that was resolved. Both walk from the root one segment at a time with directory descriptors
(``openat``), so that what they check is the very object they open:

- no link is followed below the root: every segment is looked at without following it and
  opened with ``O_NOFOLLOW`` (a link swapped in between fails the open), so a name under the
  root cannot lead out of it;
- the root's filesystem is never left (a mount point below the root is refused);
- only regular files with one name are taken: a FIFO, socket, device or folder is refused
  before it is opened (and opened with ``O_NONBLOCK`` regardless), and a file with several hard
  links is refused, since its other name may lie outside the root and a hard link needs no
  right to read what it names;
- each file is pinned by its inode, size, modification and change times (``st_ctime`` cannot be
  set by the file's owner, unlike ``st_mtime``); a read checks the pins before and after it
  reads, and the bytes against the SHA-256 of the first read when one is given.

The root itself is the administrator's path: links in it are followed when it is opened, and
the folder they lead to is pinned by its inode too (a member able to rename it could otherwise
put another folder in its place). Device numbers are compared with the root's, not stored: they
differ between the machines of a cluster that mount one shared filesystem, inodes and times do
not. See ``docs/references.md``.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import stat
from dataclasses import dataclass, field

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FOLDER_FLAGS = _ROOT_FLAGS | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_PATTERN = frozenset("*?[")
MAX_ENTRIES = 100_000  # folder entries one resolution may look at (a glob over a huge tree)


class Refused(Exception):
    """A name that may not be read: ``kind`` is link, hard-link, mount, special, unreadable,
    too-large or too-many; the message names the path under the root, never where a link
    leads."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Changed(Exception):
    """The file is not the one that was resolved any more (the message says how)."""


@dataclass(frozen=True)
class Pinned:
    """A regular file under a root: its path there (``/``-separated) and its identity."""

    path: str
    size: int
    inode: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: str, status: os.stat_result) -> Pinned:
        return cls(path, status.st_size, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)


def is_pattern(segment: str) -> bool:
    return not _PATTERN.isdisjoint(segment)


@dataclass(frozen=True)
class Listing:
    """What a location named: the root's inode and the files under it, sorted by path."""

    root_inode: int
    files: list[Pinned]


def resolve(root: str, relative: str, max_files: int, max_size: int) -> Listing:
    """The regular files that ``relative`` (segments under ``root``, patterns allowed) names;
    raises :class:`Refused` for a name that may not be read (a link, a special file, a file over
    ``max_size`` bytes...), even one a pattern matched: it would change what the dataset is."""
    walk = _Walk(max_files, max_size)
    root_fd = os.open(root, _ROOT_FLAGS)
    try:
        status = os.fstat(root_fd)
        walk.device = status.st_dev
        walk.expand(root_fd, "", relative.split("/"))
    finally:
        os.close(root_fd)
    return Listing(status.st_ino, sorted(walk.found, key=lambda pinned: pinned.path))


@dataclass
class _Walk:
    max_files: int
    max_size: int
    device: int = 0
    entries: int = 0
    found: list[Pinned] = field(default_factory=list)

    def expand(self, folder: int, prefix: str, segments: list[str]) -> None:
        head, rest = segments[0], segments[1:]
        names = self._matches(folder, head) if is_pattern(head) else [head]
        for name in names:
            path = prefix + name
            try:
                status = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                continue  # named, not there: no file (the caller says so)
            except OSError as error:
                raise Refused("unreadable", f"{path} cannot be read: {error.strerror}") from None
            self._check(path, status)
            if rest:
                if stat.S_ISDIR(status.st_mode):
                    child = _open_folder(folder, name, path, Refused)
                    try:
                        self.expand(child, path + "/", rest)
                    finally:
                        os.close(child)
                continue  # a file where a folder is named: nothing under it
            self.found.append(self._pin(folder, name, path, status))
            if len(self.found) > self.max_files:
                raise Refused("too-many", f"it names more than {self.max_files:,} files")

    def _matches(self, folder: int, pattern: str) -> list[str]:
        names = []
        with os.scandir(folder) as entries:
            for entry in entries:
                self.entries += 1
                if self.entries > MAX_ENTRIES:
                    raise Refused(
                        "too-many", f"its patterns look at more than {MAX_ENTRIES:,} entries"
                    )
                hidden = entry.name.startswith(".") and not pattern.startswith(".")
                if not hidden and fnmatch.fnmatchcase(entry.name, pattern):
                    names.append(entry.name)
        return sorted(names)

    def _check(self, path: str, status: os.stat_result) -> None:
        if stat.S_ISLNK(status.st_mode):
            raise Refused(
                "link",
                f"{path} is a link: the broker follows no link under a granted folder (where "
                "it leads may change, and may lie outside); name the file itself",
            )
        if status.st_dev != self.device:
            raise Refused(
                "mount",
                f"{path} lies on another filesystem mounted under the granted folder",
            )

    def _pin(self, folder: int, name: str, path: str, status: os.stat_result) -> Pinned:
        if not stat.S_ISREG(status.st_mode):
            raise Refused("special", f"{path} is {_kind(status.st_mode)}, not a regular file")
        fd = _open_file(folder, name, path, Refused)
        try:
            opened = os.fstat(fd)
        finally:
            os.close(fd)
        if not stat.S_ISREG(opened.st_mode) or opened.st_ino != status.st_ino:
            raise Refused("special", f"{path} changed while it was looked at: send it again")
        if opened.st_nlink > 1:
            raise Refused(
                "hard-link",
                f"{path} has {opened.st_nlink} names (hard links): another name may lie "
                "outside the granted folder; copy the file instead of linking it",
            )
        if opened.st_size > self.max_size:
            raise Refused(
                "too-large",
                f"{path} holds {opened.st_size:,} bytes, more than one file may "
                f"({self.max_size:,}: each file is read whole by one worker)",
            )
        return Pinned.of(path, opened)


def read(root: str, root_inode: int, pinned: Pinned, sha256: str | None = None) -> bytes:
    """The bytes of the pinned file, read from the descriptor that was checked; raises
    :class:`Changed` if the root or the file is not the one pinned (or its content not
    ``sha256``)."""
    try:
        root_fd = os.open(root, _ROOT_FLAGS)
    except OSError as error:
        raise Changed(f"the granted folder cannot be opened: {error.strerror}") from None
    opened = [root_fd]
    try:
        status = os.fstat(root_fd)
        if status.st_ino != root_inode:
            raise Changed("the granted folder was replaced by another folder")
        device = status.st_dev
        *folders, name = pinned.path.split("/")
        folder = root_fd
        for index, segment in enumerate(folders):
            folder = _open_folder(folder, segment, "/".join(folders[: index + 1]), Changed)
            opened.append(folder)
            if os.fstat(folder).st_dev != device:
                raise Changed(f"{'/'.join(folders[: index + 1])} is now another filesystem")
        try:
            status = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            raise Changed(f"{pinned.path} is gone") from None
        if not stat.S_ISREG(status.st_mode):
            raise Changed(f"{pinned.path} is now {_kind(status.st_mode)}")
        fd = _open_file(folder, name, pinned.path, Changed)
        with os.fdopen(fd, "rb") as file:
            _same(pinned, os.fstat(fd), device)
            data = file.read(pinned.size + 1)
            _same(pinned, os.fstat(fd), device)  # not written to while it was read
    finally:
        for fd in reversed(opened):
            os.close(fd)
    if len(data) != pinned.size:
        raise Changed(f"{pinned.path} changed size")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise Changed(f"{pinned.path} holds other bytes than when it was first read")
    return data


def _same(pinned: Pinned, status: os.stat_result, device: int) -> None:
    if not stat.S_ISREG(status.st_mode) or status.st_dev != device:
        raise Changed(f"{pinned.path} is another file")
    if status.st_ino != pinned.inode:
        raise Changed(f"{pinned.path} was replaced by another file")
    if status.st_nlink > 1:
        raise Changed(f"{pinned.path} gained another name (a hard link)")
    if Pinned.of(pinned.path, status) != pinned:
        raise Changed(f"{pinned.path} was written to")


def _open_folder(folder: int, name: str, path: str, error: type[Exception]) -> int:
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=folder)
    except OSError as failure:
        raise _failure(error, failure, path, "folder") from None


def _open_file(folder: int, name: str, path: str, error: type[Exception]) -> int:
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=folder)
    except OSError as failure:
        raise _failure(error, failure, path, "file") from None


def _failure(error: type[Exception], failure: OSError, path: str, what: str) -> Exception:
    """A failed open as ``error`` (:class:`Refused` or :class:`Changed`); ELOOP or ENOTDIR under
    ``O_NOFOLLOW`` means a link was swapped in after the name was looked at."""
    if failure.errno in (errno.ELOOP, errno.ENOTDIR):
        message = f"{path} is now a link, or no longer a {what}"
        return Refused("link", message) if error is Refused else Changed(message)
    if failure.errno == errno.ENOENT:
        message = f"{path} is gone"
        return Refused("unreadable", message) if error is Refused else Changed(message)
    message = f"{path} cannot be opened: {failure.strerror}"
    return Refused("unreadable", message) if error is Refused else Changed(message)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a link"
    return "a special file"
