"""The dataset catalog over HTTP: members publish descriptions (never data), the broker measures
what they send for it, and every member browses the catalog as DCAT/ODRL JSON-LD with the offers
it could get."""

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from broker import flows
from broker.catalog import entries, jsonld, service
from broker.catalog.entries import Entry
from broker.catalog.schemas import CatalogEntryRead, DatasetDescription
from broker.errors import MAX_INT32, example, responses
from broker.web.deps import (
    CurrentCaller,
    CurrentMember,
    RateLimitedMember,
    SessionDep,
    SettingsDep,
    SpooledUpload,
)

router = APIRouter(prefix="/v1/catalog", tags=["Catalog"])
DatasetId = Annotated[
    str,
    Path(description="The dataset's id in the catalog", max_length=36, examples=["3f2b9c1e"]),
]
NO_DATASET = {404: example(404, "not-found", "Not found", "No dataset '3f2b9c1e' in the catalog")}
NOT_YOURS = {
    403: example(
        403,
        "forbidden",
        "Forbidden",
        "Dataset 3f2b9c1e is 'sn-hospital''s: only its provider may change it",
    )
}
JSON_LD = {
    200: {
        "description": "DCAT/ODRL JSON-LD (`application/ld+json`), its context inline",
        "content": {jsonld.MEDIA_TYPE: {"schema": {"type": "object"}}},
    }
}


def _read(entry: Entry) -> CatalogEntryRead:
    return CatalogEntryRead.model_validate(entry.as_dict())


def _etagged(entry: Entry, response: Response) -> CatalogEntryRead:
    response.headers["ETag"] = service.etag(entry.dataset.version)
    return _read(entry)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.post(
    "/datasets",
    status_code=201,
    response_model=CatalogEntryRead,
    responses=responses(400, 401, 403, 413, 422),
    summary="Publish a dataset's description (member)",
    description="Describes a dataset the calling member holds: title, description, keywords, "
    "columns with their roles, rows, format, the purposes it may serve. Never the data: send "
    "the file to `/measurement` for the broker to measure it (only its figures are kept). The "
    "entry is version 1; `Location` names it.",
)
def publish_dataset(
    body: DatasetDescription, session: SessionDep, caller: CurrentMember, response: Response
) -> CatalogEntryRead:
    entry = service.publish(session, caller, body)
    response.headers["Location"] = f"/v1/catalog/datasets/{entry.dataset.id}"
    return _etagged(entry, response)


@router.get(
    "",
    response_class=JSONResponse,
    responses=JSON_LD | responses(401, 403, 422),
    summary="The catalog, with the offers you could get (DCAT/ODRL JSON-LD)",
    description="Datasets of active members that are not withdrawn, newest change first, "
    "filtered and paged. For a member, each dataset carries under `odrl:hasPolicy` the offers "
    "the broker computes from both F-SLA records for each purpose (`fedbroker:offerKind`: "
    "`as_is`, or `anonymized` with the k, l and t the data must meet first), and under "
    "`fedbroker:refusal` the purposes it could not get, with why. The next page is in the "
    "`Link` header (rel=next).",
)
def list_catalog(
    session: SessionDep,
    caller: CurrentCaller,
    request: Request,
    jurisdiction: Annotated[
        str | None, Query(description="The provider's jurisdiction", max_length=16)
    ] = None,
    purpose: Annotated[
        str | None, Query(description="A purpose it may serve", max_length=200)
    ] = None,
    column: Annotated[str | None, Query(description="A column it holds", max_length=200)] = None,
    q: Annotated[
        str | None,
        Query(description="Words its title, description or keywords all hold", max_length=200),
    ] = None,
    provider: Annotated[
        str | None, Query(description="The provider's member id", max_length=64)
    ] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT32)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> JSONResponse:
    entries, total = service.search(
        session,
        jurisdiction=jurisdiction,
        purpose=purpose,
        column=column,
        keyword=q,
        provider=provider,
        offset=offset,
        limit=limit,
    )
    offers = service.offers_for(session, caller, entries)
    base = _base(request)
    datasets = [
        jsonld.dataset(entry.as_dict(), found, base)
        for entry, found in zip(entries, offers, strict=True)
    ]
    headers = {}
    if offset + len(entries) < total:
        following = request.url.include_query_params(offset=offset + len(entries), limit=limit)
        headers["Link"] = f'<{following}>; rel="next"'
    return JSONResponse(
        jsonld.catalog(datasets, total, offset, limit, base),
        media_type=jsonld.MEDIA_TYPE,
        headers=headers,
    )


@router.get(
    "/datasets/{dataset_id}",
    response_class=JSONResponse,
    responses=JSON_LD | responses(401, 403, 404, 422, examples=NO_DATASET),
    summary="One dataset, with the offers you could get (DCAT/ODRL JSON-LD)",
    description="The dataset at its current version (or `version`), as in the catalog. A "
    "withdrawn dataset is seen only by its provider and administrators.",
)
def get_catalog_dataset(
    dataset_id: DatasetId,
    session: SessionDep,
    caller: CurrentCaller,
    request: Request,
    version: Annotated[int | None, Query(ge=1, le=MAX_INT32)] = None,
) -> JSONResponse:
    entry = entries.entry(session, caller, dataset_id, version)
    [offers] = service.offers_for(session, caller, [entry])
    document = jsonld.dataset(entry.as_dict(), offers, _base(request))
    return JSONResponse(
        document,
        media_type=jsonld.MEDIA_TYPE,
        headers={"ETag": service.etag(entry.dataset.version)},
    )


@router.get(
    "/datasets/{dataset_id}/versions",
    response_model=list[CatalogEntryRead],
    responses=responses(401, 403, 404, 422, examples=NO_DATASET),
    summary="Every version of a dataset's description, oldest first",
    description="Each version as its provider wrote it, with the broker's measurement of it.",
)
def list_catalog_versions(
    dataset_id: DatasetId, session: SessionDep, caller: CurrentCaller
) -> list[CatalogEntryRead]:
    return [_read(entry) for entry in service.versions(session, caller, dataset_id)]


@router.put(
    "/datasets/{dataset_id}",
    response_model=CatalogEntryRead,
    responses=responses(400, 401, 403, 404, 412, 413, 422, examples=NO_DATASET | NOT_YOURS),
    summary="Revise a dataset's description (its provider): a new version",
    description="The description as a whole, as for publishing; the entry gets the next "
    "version (the older ones stay readable). Negotiations go on at the version they started "
    "from. `If-Match` (the `ETag` you read) makes sure you revise what you read.",
)
def revise_dataset(
    dataset_id: DatasetId,
    body: DatasetDescription,
    session: SessionDep,
    caller: CurrentMember,
    response: Response,
    if_match: Annotated[str | None, Header(max_length=200)] = None,
) -> CatalogEntryRead:
    return _etagged(service.revise(session, caller, dataset_id, body, if_match), response)


@router.delete(
    "/datasets/{dataset_id}",
    status_code=204,
    responses=responses(401, 403, 404, 422, examples=NO_DATASET | NOT_YOURS),
    summary="Withdraw a dataset from the catalog (its provider, or an administrator)",
    description="It leaves the catalog for good; its versions stay readable by its provider "
    "and administrators; negotiations about it that are not over end. Agreements already made "
    "stay in force. Withdrawing twice is the same as once.",
)
def withdraw_dataset(dataset_id: DatasetId, session: SessionDep, caller: CurrentCaller) -> Response:
    flows.withdraw_dataset(session, caller, dataset_id)
    return Response(status_code=204)


@router.post(
    "/datasets/{dataset_id}/measurement",
    response_model=CatalogEntryRead,
    responses=responses(400, 401, 403, 404, 413, 422, 429, examples=NO_DATASET | NOT_YOURS),
    summary="Have the broker measure the dataset (its provider)",
    description="Send the file the current version describes (its columns must be the "
    "described ones). The broker measures it as it would a transfer (the described "
    "quasi-identifiers, to which it adds every column that measures as one; k in people, l, t, "
    "the columns that identify) and estimates the information a generalization to k = 2, 3, "
    "5, 10, 20 keeps. It keeps the figures, never the file; offers then say whether the data "
    "could leave as it is, and what utility an anonymized offer is expected to keep. Each "
    "measurement counts against the member's upload rate limit, as a transfer does.",
)
def measure_dataset(
    dataset_id: DatasetId,
    caller: RateLimitedMember,  # before the upload: a caller over its limit costs no spool copy
    upload: SpooledUpload,
    session: SessionDep,
    settings: SettingsDep,
    response: Response,
) -> CatalogEntryRead:
    return _etagged(service.measure(session, caller, dataset_id, upload, settings), response)
