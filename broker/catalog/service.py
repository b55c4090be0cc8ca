"""The catalog's use cases: publish a description, revise it, withdraw it, have the broker measure
the data it describes, and read the catalog with the offers each member could get.

A description is never the data: the file a provider sends to be measured is read from the spool
folder, summarized (rows, k, l, t, the columns that identify, the utility a generalization to k
keeps) and removed with the request, as any upload is.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from broker.anonymize import Target, plan_remedy
from broker.audit import service as audit
from broker.callers import Caller
from broker.catalog import repository
from broker.catalog.entries import Entry, entry, party_map, with_health
from broker.catalog.models import CatalogDataset, CatalogVersion
from broker.catalog.schemas import DatasetDescription
from broker.catalog.summary import CatalogSummary
from broker.columns.names import attribute_key
from broker.config import Settings
from broker.engines.pandas import PandasEngine
from broker.errors import Forbidden, NotFound, Unprocessable, VersionMismatch
from broker.fsla import offers as offers_
from broker.fsla.decide import measure as measure_table
from broker.fsla.identifying import dropped, identifying
from broker.identifiers.short_text import contact_in_text
from broker.intake.tables import counting_limits, open_upload
from broker.intake.uploads import Upload
from broker.members.models import Member
from broker.metrics.content import split_across
from broker.wire.statuses import ColumnRole

# The k a provider's data is generalized to when the broker estimates the utility an offer
# keeps; an offer asking another k reads the next one up.
UTILITY_KS = (2, 3, 5, 10, 20)
# Rows up to which that estimate is made (it anonymizes the whole table once per k).
UTILITY_MAX_ROWS = 200_000


def publish(session: Session, caller: Caller, description: DatasetDescription) -> Entry:
    """A new catalog entry, version 1, by the calling member."""
    _no_personal_data(description)
    now = datetime.now(UTC)
    dataset = CatalogDataset(id=str(uuid.uuid4()), provider_id=caller.member_id, version=1)
    _index(dataset, description)
    dataset.created_at = dataset.updated_at = now
    first = _version(dataset.id, 1, description, caller, now)
    repository.add(session, dataset, first)
    audit.record(
        session, caller.name, "catalog.published", dataset.id, {"title": description.title}
    )
    session.commit()
    return _entry(session, dataset, first)


def revise(
    session: Session,
    caller: Caller,
    dataset_id: str,
    description: DatasetDescription,
    if_match: str | None,
) -> Entry:
    """A new version of the description (``If-Match``, when given, must name the current one);
    negotiations go on at the version they started from."""
    dataset = _owned(session, caller, dataset_id)
    if dataset.withdrawn_at is not None:
        raise Unprocessable(f"Dataset {dataset_id} is withdrawn: publish a new one")
    _no_personal_data(description)
    if if_match is not None and if_match.strip() != etag(dataset.version):
        raise VersionMismatch(
            f"If-Match {if_match.strip()} does not name version {dataset.version} of dataset "
            f"{dataset_id} (ETag {etag(dataset.version)}): read it again"
        )
    now = datetime.now(UTC)
    dataset.version += 1
    dataset.updated_at = now
    _index(dataset, description)
    row = _version(dataset.id, dataset.version, description, caller, now)
    repository.add_version(session, row)
    audit.record(session, caller.name, "catalog.revised", dataset.id, {"version": dataset.version})
    session.commit()
    return _entry(session, dataset, row)


def withdraw(session: Session, caller: Caller, dataset_id: str) -> str | None:
    """Out of the catalog for good (its versions stay readable by its provider and admins), in
    the caller's transaction (:func:`broker.flows.withdraw_dataset` ends its negotiations and
    commits); returns its id, or None when it was withdrawn already."""
    dataset = _owned(session, caller, dataset_id, admin_too=True)
    if dataset.withdrawn_at is not None:
        return None
    dataset.withdrawn_at = dataset.updated_at = datetime.now(UTC)
    audit.record(session, caller.name, "catalog.withdrawn", dataset.id, {})
    return dataset.id


def measure(
    session: Session, caller: Caller, dataset_id: str, upload: Upload, settings: Settings
) -> Entry:
    """Measure the file the provider sends for the current version and keep the summary (never
    the file). Its columns must be the described ones."""
    dataset = _owned(session, caller, dataset_id)
    row = repository.version(session, dataset.id, dataset.version)
    description = DatasetDescription.model_validate(row.description)
    session.rollback()  # no transaction held while measuring
    quasi = description.roles(ColumnRole.QUASI_IDENTIFIER)
    sensitive = description.roles(ColumnRole.SENSITIVE)
    keys = description.roles(ColumnRole.PERSON_KEY)
    table = open_upload(upload, settings, quasi, sensitive, keys[0] if keys else None)
    described = {attribute_key(c.name): c.name for c in description.columns}
    sent = {attribute_key(c): c for c in [*table.engine.columns, *keys]}
    if described.keys() != sent.keys():
        missing = sorted(described[k] for k in described.keys() - sent.keys())
        extra = sorted(sent[k] for k in sent.keys() - described.keys())
        raise Unprocessable(
            "The file's columns are not the described ones"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not described: {', '.join(extra)}" if extra else "")
            + ": revise the description, or send the file it describes"
        )
    with counting_limits():
        report, measured_qis, _inferred = measure_table(table.engine, quasi, sensitive)
    summary = _summary(report, measured_qis, sensitive, table.engine)
    dataset = _owned(session, caller, dataset_id)
    row = repository.version(session, dataset.id, dataset.version)
    row.summary = summary.stored()
    row.measured_sha256 = upload.sha256
    row.measured_at = datetime.now(UTC)
    audit.record(
        session,
        caller.name,
        "catalog.measured",
        dataset.id,
        {"version": row.version, "dataset_sha256": upload.sha256, "k": summary.k},
    )
    session.commit()
    return _entry(session, dataset, row)


def versions(session: Session, caller: Caller, dataset_id: str) -> list[Entry]:
    current = entry(session, caller, dataset_id)
    return [
        Entry(current.dataset, row, current.provider)
        for row in repository.versions(session, dataset_id)
    ]


def search(
    session: Session,
    *,
    jurisdiction: str | None = None,
    purpose: str | None = None,
    column: str | None = None,
    keyword: str | None = None,
    provider: str | None = None,
    offset: int = 0,
    limit: int = 20,
) -> tuple[list[Entry], int]:
    words = [w for w in (keyword or "").split() if w]
    rows, total = repository.listed(
        session,
        jurisdiction=jurisdiction,
        purpose=purpose,
        column=column,
        words=words,
        provider=provider,
        offset=offset,
        limit=limit,
    )
    return with_health(session, [Entry(*row) for row in rows]), total


def _entry(session: Session, dataset: CatalogDataset, row: CatalogVersion) -> Entry:
    provider = session.get(Member, dataset.provider_id)
    return with_health(session, [Entry(dataset, row, provider)])[0]


def offers_for(session: Session, caller: Caller, entries: list[Entry]) -> list[list]:
    """The offers each entry makes to the calling member (none for an administrator)."""
    if caller.member_id is None:
        return [None for _ in entries]
    parties = party_map(session, [caller.member_id, *(e.provider.id for e in entries)])
    consumer = parties[caller.member_id]
    return [offers_.offers(e.listing(), parties[e.provider.id], consumer) for e in entries]


def etag(version: int) -> str:
    return f'"{version}"'


def _no_personal_data(description: DatasetDescription) -> None:
    """A catalog entry is read in every jurisdiction of the federation and is not measured: it
    may describe the data, never carry it. Its free text is searched by the identifier detector
    (:mod:`broker.identifiers`), as a dataset's values are."""
    texts = [("title", description.title), ("description", description.description)]
    texts += [(f"keywords[{i}]", word) for i, word in enumerate(description.keywords)]
    texts += [(f"purposes[{i}]", word) for i, word in enumerate(description.purposes)]
    for i, column in enumerate(description.columns):
        texts += [(f"columns[{i}].name", column.name)]
        texts += [(f"columns[{i}].description", column.description)]
    for field, text in texts:
        found = contact_in_text(text)
        if found:
            raise Unprocessable(
                f"The description's {field} holds {found}: a catalog entry is read in every "
                "jurisdiction of the federation; describe the data, never its values"
            )
    # Lists are read side by side, as the entry shows them: pieces of one identifier, each
    # clean alone, are refused too.
    lists = {
        "keywords": description.keywords,
        "purposes": description.purposes,
        "columns[].name": [column.name for column in description.columns],
        "columns[].description": [column.description for column in description.columns],
    }
    for field, listed in lists.items():
        split = split_across(field, [text or "" for text in listed])
        if split is not None:
            where, found = split
            raise Unprocessable(
                f"The description's {where} hold {found} once read together: a catalog entry "
                "is read in every jurisdiction of the federation; describe the data, never its "
                "values"
            )


def _owned(
    session: Session, caller: Caller, dataset_id: str, admin_too: bool = False
) -> CatalogDataset:
    dataset = repository.get(session, dataset_id)
    if dataset is None:
        raise NotFound(f"No dataset {dataset_id!r} in the catalog")
    if caller.member_id != dataset.provider_id and not (admin_too and caller.is_admin):
        raise Forbidden(
            f"Dataset {dataset_id} is {dataset.provider_id!r}'s: only its provider may change it"
        )
    return dataset


def _version(
    dataset_id: str, number: int, description: DatasetDescription, caller: Caller, now: datetime
) -> CatalogVersion:
    return CatalogVersion(
        dataset_id=dataset_id,
        version=number,
        description=description.model_dump(mode="json"),
        created_by=caller.name,
        created_at=now,
    )


def _index(dataset: CatalogDataset, description: DatasetDescription) -> None:
    """The search fields of ``description`` (see :func:`broker.catalog.repository.listed`)."""
    dataset.title = description.title
    words = [description.title, description.description, *description.keywords]
    dataset.search_text = "\n".join(w.casefold() for w in words)
    dataset.search_columns = _delimited(c.name for c in description.columns)
    dataset.search_purposes = _delimited(description.purposes)


def _delimited(words) -> str:
    return "\n" + "\n".join(w.strip().casefold() for w in words) + "\n"


def _summary(report, quasi_identifiers, sensitive, engine) -> CatalogSummary:
    """What the catalog keeps of a measurement: figures, never values."""
    qi = report.quasi_identifiers
    measured = report.sensitive
    return CatalogSummary(
        rows=report.rows,
        quasi_identifiers=list(quasi_identifiers),
        sensitive=list(sensitive),
        k=qi.anonymity.k_people if qi else None,
        max_prosecutor_risk=qi.anonymity.prosecutor_risk.max if qi else None,
        l=min((m.l_diversity for m in measured), default=None),
        t=max((m.t_closeness for m in measured), default=None),
        identifiers=[a.name for a in report.attributes if identifying(a, sensitive)],
        utility_at_k=_utility(engine, report, quasi_identifiers, sensitive),
        # What a transfer's remedy would drop as identifiers, per k: what an offer keeps home.
        dropped_at_k={
            str(k): list(dropped(report, quasi_identifiers, sensitive, k, engine.dictionary))
            for k in UTILITY_KS
        },
    )


def _utility(engine, report, quasi_identifiers, sensitive) -> dict[str, float]:
    """The share of information (non-uniform entropy) a Mondrian generalization to each k of
    :data:`UTILITY_KS` keeps, the columns the remedy would drop as identifiers at that k dropped
    (:func:`broker.fsla.identifying.dropped`, as a transfer's remedy): what an offer asking that
    k can expect. Only for a table in memory, up to :data:`UTILITY_MAX_ROWS` rows."""
    if not isinstance(engine, PandasEngine) or not quasi_identifiers:
        return {}
    if engine.rows > UTILITY_MAX_ROWS:
        return {}
    frame = engine.frame
    found = {}
    for k in UTILITY_KS:
        if k > engine.rows:
            break
        drop = dropped(report, quasi_identifiers, sensitive, k, frame.__getitem__)
        target = Target(
            quasi_identifiers=tuple(q for q in quasi_identifiers if q not in drop),
            sensitive=tuple(s for s in sensitive if s not in drop),
            drop=tuple(drop),
            k=k,
        )
        try:
            remedy = plan_remedy(frame, target)
        except ValueError:
            break
        if not remedy.satisfied or remedy.information_loss is None:
            break
        found[str(k)] = round(remedy.information_loss.utility_percent, 2)
    return found
