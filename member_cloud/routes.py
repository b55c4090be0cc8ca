"""The member cloud's routes: its datasets, its requests to the broker, and its inbox.

How stored bytes are served back (attachment, allow-listed types) is :mod:`member_cloud.downloads`;
how a delivery is checked and stored is :mod:`member_cloud.delivery`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Annotated

from anyio import from_thread
from fastapi import APIRouter, Depends, File, Form, Path, Request, Response, UploadFile
from fastapi.responses import FileResponse, JSONResponse

from broker.wire import headers as h
from broker.wire.signing import KEYS_PATH, TAG
from broker.wire.statuses import TransferKind
from fedbroker.client import BrokerAnsweredError, BrokerKeys, BrokerUnavailable, Client, plain
from member_cloud import delivery
from member_cloud.config import MemberSettings
from member_cloud.downloads import (
    DOWNLOAD_RESPONSE,
    SAFE_MEDIA_TYPES,
    download,
    media_type,
    safe_media_type,
)
from member_cloud.errors import (
    PROBLEM_MEDIA_TYPE,
    BrokerUnreachable,
    InvalidName,
    NotReady,
    responses,
)
from member_cloud.schemas import (
    DatasetRead,
    DeliveryReceipt,
    InboxEntry,
    MemberInfo,
    TransferCreate,
)
from member_cloud.storage import NAME_RULE, DatasetInfo, DatasetStore, Inbox, SeenNonces

# Dependencies that only read the app's state are ``async def``: FastAPI runs each ``def``
# dependency in its thread pool, a hand-off per dependency and request (four on a delivery).


async def _settings(request: Request) -> MemberSettings:
    return request.app.state.settings


async def _datasets(request: Request) -> DatasetStore:
    return request.app.state.datasets


async def _inbox(request: Request) -> Inbox:
    return request.app.state.inbox


async def _broker(request: Request) -> Client:
    return request.app.state.broker


async def _broker_keys(request: Request) -> BrokerKeys:
    return request.app.state.broker_keys


def _streamed_body(request: Request) -> Iterator[bytes]:
    """The request body chunk by chunk as it arrives, for a ``def`` route (run in a worker
    thread): each chunk is received on the event loop, none is kept after it is yielded."""
    stream = request.stream()

    async def next_chunk() -> bytes | None:
        return await anext(stream, None)

    while (chunk := from_thread.run(next_chunk)) is not None:
        if chunk:
            yield chunk


SettingsDep = Annotated[MemberSettings, Depends(_settings)]
DatasetsDep = Annotated[DatasetStore, Depends(_datasets)]
InboxDep = Annotated[Inbox, Depends(_inbox)]
BrokerDep = Annotated[Client, Depends(_broker)]
DatasetName = Annotated[str, Path(max_length=128, description=f"Dataset name: {NAME_RULE}")]
TransferId = Annotated[str, Path(max_length=128)]


def dataset_read(info: DatasetInfo) -> DatasetRead:
    return DatasetRead(
        name=info.name, size_bytes=info.size_bytes, sha256=info.sha256, modified_at=info.modified_at
    )


health = APIRouter(tags=["Member"])


@health.get("/livez", summary="The process answers (no token needed)")
def livez() -> dict[str, str]:
    return {"status": "ok"}


@health.get(
    "/readyz",
    responses=responses(503),
    summary="Ready to receive deliveries (no token needed)",
    description="200 when a delivery could be stored now (the inbox folder is there and can be "
    "written), else 503 with the reason. The broker checks it on a schedule: while it fails, "
    "deliveries to this member are held at the broker, their attempts not spent.",
)
def readyz(store: InboxDep) -> dict[str, str]:
    problem = store.unready()
    if problem is not None:
        raise NotReady(f"This member cloud cannot take a delivery now: {problem}")
    return {"status": "ready"}


member = APIRouter(tags=["Member"])


@member.get("/", response_model=MemberInfo, summary="Who this member cloud is")
def whoami(settings: SettingsDep) -> MemberInfo:
    return MemberInfo(
        id=settings.id,
        name=settings.name or settings.id,
        jurisdiction=settings.jurisdiction,
        inbox_url=settings.inbox_url,
        broker_url=settings.broker_base_url,
    )


datasets = APIRouter(prefix="/datasets", tags=["Datasets"])


@datasets.get("", response_model=list[DatasetRead], summary="This member's datasets, by name")
def list_datasets(store: DatasetsDep) -> list[DatasetRead]:
    return [dataset_read(info) for info in store.list()]


@datasets.post(
    "",
    status_code=201,
    response_model=DatasetRead,
    responses={200: {"description": "Replaced an existing dataset"}, **responses(409, 413, 422)},
    summary="Upload a dataset (201; 200 when replace=true replaced one)",
)
def upload_dataset(
    store: DatasetsDep,
    response: Response,
    file: Annotated[UploadFile, File(description="CSV, JSON (array of records) or Parquet")],
    name: Annotated[
        str | None,
        Form(description=f"Name to store it under (default: the file's name): {NAME_RULE}"),
    ] = None,
    replace: Annotated[bool, Form(description="Overwrite a dataset of the same name")] = False,
) -> DatasetRead:
    name = name or file.filename
    if not name:
        raise InvalidName("Give the dataset a name: the 'name' field or the file's name")
    created = store.save(name, file.file, replace=replace)
    response.status_code = 201 if created else 200
    response.headers["Location"] = f"/datasets/{name}"
    return dataset_read(store.info(name))


@datasets.get(
    "/{name}",
    response_class=FileResponse,
    responses={**DOWNLOAD_RESPONSE, **responses(404, 422)},
    summary="The dataset's bytes, as an attachment",
)
def get_dataset(name: DatasetName, store: DatasetsDep) -> FileResponse:
    return download(store.path(name), media_type(name), name)


@datasets.delete(
    "/{name}", status_code=204, responses=responses(404, 422), summary="Delete a dataset"
)
def delete_dataset(name: DatasetName, store: DatasetsDep) -> Response:
    store.delete(name)
    return Response(status_code=204)


transfers = APIRouter(prefix="/transfers", tags=["Transfers"])


@transfers.post(
    "",
    responses={
        200: {"description": "The broker's decision (its TransferRead), as it answered"},
        **responses(400, 401, 403, 404, 409, 413, 422, 502),
    },
    summary="Ask the broker to send a local dataset to another member",
    description="Uploads the dataset to the broker (`POST /v1/transfers`) and answers the "
    "broker's decision as is: `approved` (the broker delivers it to the destination's inbox), "
    "`anonymization_required` or `rejected`. An error the broker answers is passed through "
    "with its status and problem+json body; an unknown local dataset is 404; a broker that "
    "does not answer is 502.\n\n"
    "Without `idempotency_key` (and unless `dry_run`), this member cloud makes one (a UUID) "
    "and sends it to the broker. The key sent is in the "
    f"`{h.IDEMPOTENCY_KEY}` answer header; after "
    "a 502 the broker may have recorded the transfer: sending the same request again with "
    "that key as `idempotency_key` replays the broker's decision instead of making a second "
    "transfer.",
)
def create_transfer(body: TransferCreate, store: DatasetsDep, broker: BrokerDep) -> JSONResponse:
    # A dry run records nothing at the broker (which ignores the key then): nothing to protect.
    key = body.idempotency_key or (None if body.dry_run else str(uuid.uuid4()))
    headers = {h.IDEMPOTENCY_KEY: key} if key else {}
    try:
        with store.open(body.dataset) as data:
            if body.kind == TransferKind.AGGREGATE:
                answer = broker.create_transfer(
                    data,
                    body.dataset,
                    destination=body.destination,
                    purpose=body.purpose,
                    kind=TransferKind.AGGREGATE,
                    queries=body.queries or [],
                    epsilon=body.epsilon or "",
                    delta=body.delta,
                    dry_run=body.dry_run,
                    idempotency_key=key,
                    content_type=media_type(body.dataset),
                )
            else:
                answer = broker.create_transfer(
                    data,
                    body.dataset,
                    destination=body.destination,
                    purpose=body.purpose,
                    quasi_identifiers=body.quasi_identifiers,
                    sensitive=body.sensitive,
                    anonymize=body.anonymize,
                    dry_run=body.dry_run,
                    idempotency_key=key,
                    content_type=media_type(body.dataset),
                    agreement_id=body.agreement_id,
                )
    except BrokerAnsweredError as error:
        return JSONResponse(
            error.problem,
            status_code=error.status,
            media_type=PROBLEM_MEDIA_TYPE,
            headers=headers,
        )
    except BrokerUnavailable as error:
        if error.timed_out:
            what = f"The broker at {error.base_url} did not answer in time"
        else:
            what = f"The broker at {error.base_url} does not answer: {error.reason}"
        if key is None:  # a dry run: the broker records nothing
            retry = "a dry run records nothing: send it again when the broker is back"
        else:
            retry = (
                "it may have recorded the transfer: to retry without risking a second "
                f"transfer, send the same request with idempotency_key {key!r}"
            )
        raise BrokerUnreachable(f"{what}; {retry}", headers=headers) from None
    return JSONResponse(plain(answer), headers=headers)


deliveries = APIRouter(prefix="/inbox", tags=["Inbox"])


async def _nonces(request: Request) -> SeenNonces:
    return request.app.state.nonces


@deliveries.post(
    "",
    status_code=201,
    response_model=DeliveryReceipt,
    responses={
        200: {"model": DeliveryReceipt, "description": "Already received: nothing stored"},
        **responses(400, 401, 403, 409, 413, 422),
    },
    summary="Delivery of an approved transfer (the broker only, signed for this member)",
    description="The body is the dataset's bytes, of any size up to the member's "
    "`max_upload_bytes` (10 GiB by default; 413 beyond). The broker signs each delivery with "
    f"HTTP Message Signatures (RFC 9421): `{h.SIGNATURE_INPUT}` and `{h.SIGNATURE}`, "
    f'`alg="ed25519"`, `tag="{TAG}"`, by a key it publishes at `{KEYS_PATH}`, instead of the '
    "local token. The signature covers exactly `@method`, `@target-uri` (this member's inbox "
    f"URL), `{h.CONTENT_DIGEST}` (RFC 9530, `sha-256`), `{h.CONTENT_TYPE}` and the "
    f"`X-Fedbroker-*` headers, `{h.RECIPIENT}` (this member's id) among them, and carries "
    "`created`, `expires`, `nonce` and `keyid`. It is checked before the body is read: a "
    "missing, other (the former `X-Fedbroker-Signature` too), expired or not yet valid "
    "signature is 401 and nothing of the body is read; a delivery addressed to another member "
    "is 403; a signature seen before (a replay) is 401 `replayed-delivery`. The body is then "
    "streamed to disk, hashed on the way, and kept only if it matches the signed digest (else "
    f"400, nothing kept). `{h.PURPOSE}` and `{h.FILENAME}` are percent-encoded UTF-8; they are "
    "stored decoded. The first delivery of a transfer answers 201 `received`; the same "
    "transfer again (the broker's retry, signed anew) answers 200 `already_received` and "
    "stores nothing; the same transfer id with other bytes is 409. How to check a signature "
    "without this code: docs/guides/verifying-deliveries.md.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
def receive_delivery(
    request: Request,
    store: InboxDep,
    settings: SettingsDep,
    keys: Annotated[BrokerKeys, Depends(_broker_keys)],
    nonces: Annotated[SeenNonces, Depends(_nonces)],
    response: Response,
) -> DeliveryReceipt:
    transfer_id, stored = delivery.accept(
        settings,
        store,
        keys,
        nonces,
        request.headers.items(),
        _streamed_body(request),
        time.time(),
    )
    if not stored:
        response.status_code = 200
    return DeliveryReceipt(
        status="received" if stored else "already_received", transfer_id=transfer_id
    )


inbox = APIRouter(prefix="/inbox", tags=["Inbox"])


@inbox.get("", response_model=list[InboxEntry], summary="What arrived, newest first")
def list_inbox(store: InboxDep) -> list[InboxEntry]:
    return [InboxEntry.model_validate(meta) for meta in store.list()]


@inbox.get(
    "/{transfer_id}",
    response_class=FileResponse,
    responses={**DOWNLOAD_RESPONSE, **responses(404, 422)},
    summary="The delivered bytes, as an attachment",
    description="Served under the delivered file name (or the transfer id), as the type they "
    "were delivered with when it is one of the data types listed, else as "
    "application/octet-stream: the source chooses the type, so it is never trusted to render.",
)
def get_delivery(transfer_id: TransferId, store: InboxDep) -> FileResponse:
    meta = store.meta(transfer_id)
    content_type = meta["content_type"]
    filename = meta["filename"] or transfer_id + SAFE_MEDIA_TYPES.get(
        safe_media_type(content_type), ""
    )
    return download(store.data_path(transfer_id), content_type, filename)


@inbox.get(
    "/{transfer_id}/meta",
    response_model=InboxEntry,
    responses=responses(404, 422),
    summary="Who sent a delivery, why, its checksum and when it arrived",
)
def get_delivery_meta(transfer_id: TransferId, store: InboxDep) -> InboxEntry:
    return InboxEntry.model_validate(store.meta(transfer_id))
