"""A dry run's data, kept for a while so that the member can look at what would leave.

A dry run stores no transfer, but the broker writes the table that the transfer would deliver
(the table as sent when it would be approved, else the verified remedy's result) exactly as a
delivery is written (:meth:`broker.intake.tables.Table.write`: the input's format, rows shuffled,
the person key removed), into the spool folder beside the delivery files: ``dry-runs/<id>.data``
and ``dry-runs/<id>.json`` (who ran it, the file's type and name, when it expires). Only the
member that ran it (or an admin) may fetch it, until ``BROKER_DRY_RUN_RETENTION_SECONDS`` have
passed; the spool sweep removes it then (:func:`sweep`), and a fetch after that time is a 404
even before the sweep has run. A spool folder without room for it answers 507 (try again), and
keeps no part of it.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from broker.callers import Caller
from broker.config import Settings
from broker.engines.base import Engine
from broker.errors import NotFound, storage_faults
from broker.fsla.decide import Outcome
from broker.intake.tables import Table
from broker.wire.statuses import TransferStatus

SHUFFLED = (
    "rows are shuffled on purpose, as in every delivery: row order would let a reader line "
    "releases up with each other or with the source's own files"
)


def folder(settings: Settings) -> Path:
    return settings.spool_dir / "dry-runs"


def url(dry_run_id: str) -> str:
    return f"/v1/transfers/dry-runs/{dry_run_id}/data"


def preview(
    table: Table,
    outcome: Outcome,
    dry_run_id: str,
    source_id: str,
    suffix: str,
    settings: Settings,
) -> dict[str, Any] | None:
    """Keep what the transfer would deliver; the answer's ``dataset.preview`` (None when
    nothing would leave: a rejected transfer, or no remedy)."""
    if outcome.anonymized is not None:
        engine, what = outcome.anonymized, "the anonymized data the transfer would deliver"
    elif outcome.status == TransferStatus.APPROVED:
        engine, what = table.engine, "the data as the transfer would deliver it"
    elif outcome.preview is not None:
        engine = outcome.preview
        what = "the verified remedy's result: what anonymize=auto would deliver"
    else:
        return None
    anonymized = ".anonymized" if engine is not table.engine else ""
    name = f"dry-run-{dry_run_id}{anonymized}{suffix}"
    return keep(table, engine, dry_run_id, source_id, name, what, settings)


def keep(
    table: Table,
    engine: Engine,
    dry_run_id: str,
    source_id: str,
    filename: str,
    what: str,
    settings: Settings,
) -> dict[str, Any] | None:
    """Write ``engine``'s rows as a delivery would be written; the answer's ``preview``."""
    if settings.dry_run_retention_seconds <= 0:
        return None
    root = folder(settings)
    data = root / f"{dry_run_id}.data"
    written = table.write(engine, filename, settings)
    expires = time.time() + settings.dry_run_retention_seconds
    meta = {
        "source_id": source_id,
        "media_type": table.media_type,
        "filename": filename,
        "expires_at": expires,
    }
    with storage_faults("the dry run's data, in the spool folder"):
        try:
            root.mkdir(parents=True, exist_ok=True)
            if written.data is not None:
                data.write_bytes(written.data)
            else:  # written by the out-of-core engine into the spool's deliveries folder
                os.replace(written.path, data)
            (root / f"{dry_run_id}.json").write_text(json.dumps(meta))
        except BaseException:  # nothing half written stays for the sweep
            if written.path is not None:
                written.path.unlink(missing_ok=True)
            _remove(root, dry_run_id)
            raise
    return {
        "url": url(dry_run_id),
        "expires_at": datetime.fromtimestamp(expires, UTC).isoformat(),
        "filename": filename,
        "media_type": table.media_type,
        "sha256": written.sha256,
        "size_bytes": written.size,
        "rows": engine.rows,
        "columns": len(engine.columns),
        "what": what,
        "note": SHUFFLED,
    }


def fetch(settings: Settings, caller: Caller, dry_run_id: str) -> tuple[Path, dict[str, Any]]:
    """The dry run's data file and its metadata, for its source or an admin; 404 otherwise,
    and once it has expired."""
    root = folder(settings)
    meta_path, data = root / f"{dry_run_id}.json", root / f"{dry_run_id}.data"
    missing = NotFound(
        f"No dry run {dry_run_id!r}: its data is kept "
        f"{settings.dry_run_retention_seconds:g} s (BROKER_DRY_RUN_RETENTION_SECONDS) for the "
        "member that ran it; run it again"
    )
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        raise missing from None
    if not (caller.is_admin or meta["source_id"] == caller.member_id):
        raise missing
    if meta["expires_at"] <= time.time() or not data.is_file():
        _remove(root, dry_run_id)
        raise missing
    return data, meta


def sweep(settings: Settings, now: float) -> list[Path]:
    """Remove the dry runs whose time is over (and a data file whose metadata is gone)."""
    root = folder(settings)
    removed: list[Path] = []
    for meta_path in root.glob("*.json"):
        try:
            expires = json.loads(meta_path.read_text())["expires_at"]
        except (OSError, ValueError, KeyError):
            expires = meta_path.stat().st_mtime + settings.dry_run_retention_seconds
        if expires <= now:
            removed += _remove(root, meta_path.stem)
    for data in root.glob("*.data"):
        if not (root / f"{data.stem}.json").exists() and data.stat().st_mtime < now - 60:
            data.unlink(missing_ok=True)
            removed.append(data)
    return removed


def _remove(root: Path, dry_run_id: str) -> list[Path]:
    removed = []
    for path in (root / f"{dry_run_id}.data", root / f"{dry_run_id}.json"):
        if path.exists():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
