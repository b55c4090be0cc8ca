"""What resolving and pinning a transfer by reference costs, against reading without checks.

Writes ``--files`` small CSV files in ``--folders`` folders and one file of ``--megabytes`` MiB
into a temporary folder, then times, best and median of ``--repeats``:

- resolving ``*/*.csv``: ours, ``broker.intake.pinned_files.resolve`` (a walk with directory
  descriptors, each file opened without following links and pinned); baseline, ``glob.glob``
  and an ``os.stat`` of each match (what a listing that follows links costs);
- reading the large file: ours, ``broker.intake.pinned_files.read`` with the SHA-256 of the first
read   (the pins checked before and after, the bytes hashed), what every pass of a job does per
  file; baseline, ``open(path, "rb").read()``.

    .venv/bin/python benchmarks/references.py --files 2000 --megabytes 256
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import loopback  # noqa: F401  first: it puts the repository on sys.path

from broker.intake import pinned_files


def timed(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--folders", type=int, default=20)
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "parts"
        for index in range(args.files):
            part = root / f"{index % args.folders:03d}"
            part.mkdir(parents=True, exist_ok=True)
            (part / f"{index:06d}.csv").write_text("age,sex\n30,F\n")
        large = Path(folder) / "large" / "data.csv"
        large.parent.mkdir()
        with large.open("wb") as file:
            for _ in range(args.megabytes):
                file.write(os.urandom(1 << 20))

        found = pinned_files.resolve(str(root), "*/*.csv", args.files)
        assert len(found) == args.files

        def listed():
            return [os.stat(path) for path in glob.glob(f"{root}/*/*.csv")]

        ours = timed(lambda: pinned_files.resolve(str(root), "*/*.csv", args.files), args.repeats)
        base = timed(listed, args.repeats)
        print(f"resolve {args.files:,} files in {args.folders} folders (best / median, s)")
        print(f"  ours     pinned_files.resolve    {ours[0]:.4f} / {ours[1]:.4f}")
        print(f"  baseline glob.glob + os.stat     {base[0]:.4f} / {base[1]:.4f}")

        [pinned] = pinned_files.resolve(str(large.parent), "data.csv", 1)
        digest = hashlib.sha256(large.read_bytes()).hexdigest()
        ours = timed(lambda: pinned_files.read(str(large.parent), pinned, digest), args.repeats)
        base = timed(large.read_bytes, args.repeats)
        rate = args.megabytes / ours[0]
        print(f"read one {args.megabytes} MiB file (best / median, s)")
        print(
            f"  ours     pinned_files.read+sha256 {ours[0]:.4f} / {ours[1]:.4f} ({rate:,.0f} MiB/s)"
        )
        print(f"  baseline open().read()           {base[0]:.4f} / {base[1]:.4f}")


if __name__ == "__main__":
    main()
