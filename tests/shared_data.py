"""Where the third-party reference files are read in place: ``$FEDBROKER_SHARED``, else a
``shared`` folder beside the repository (or beside its parent, for a git worktree). Tests that
need them skip, naming the place, where it is absent; nothing of it is copied here."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    if given := os.environ.get("FEDBROKER_SHARED"):
        return Path(given)
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "data").is_dir():
            return base / "shared"
    return ROOT.parent / "shared"


SHARED = _shared()
DATA = SHARED / "data"
