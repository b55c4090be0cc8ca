"""The transfer process: the binding's provider side, with the broker as the provider's agent.

A consumer's connector asks for the data a FINALIZED agreement of its member covers
(:func:`request`); the broker records the process (REQUESTED) and tells the provider member
(a ``transfer.requested`` notification on ``/v1/notifications``). The data itself flows the
broker's way: the provider member sends it on ``POST /v1/transfers`` with the agreement's id,
the broker measures it and decides, and delivers an approved transfer, signed and once, to the
consumer member's registered inbox (the broker must know where the data goes: a ``dataAddress``
elsewhere is refused, never used). :func:`advance`, a chore of the broker's job runner, ties
the two sides together:

- the next approved or rejected ``/v1`` transfer under the agreement, from its provider to its
  consumer, decided after the process was requested, carries that process's data (the oldest
  waiting process first; a transfer carries one process's at most);
- once its delivery reached the inbox, the process is STARTED and COMPLETED (a finite push, in
  one message), and the connector gets both messages at its ``callbackAddress``;
- a rejected transfer ends the process (TERMINATED), with the broker's own reason: nothing of
  what the provider sent (a column, a file name, a rule's detail) reaches the consumer this way.

Messages on a process (:func:`move`) follow :mod:`broker.dsp.transfer_states`. Each one the
provider's side sends (the broker's start, completion or end) is an event the callbacks send
(:mod:`broker.dsp.callbacks`); each one the consumer sends is told to the provider member as a
notification, in the broker's words. A termination's or suspension's reasons are read for
their shape, never stored or forwarded.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from broker.callers import Caller
from broker.config import Settings
from broker.dsp import documents, repository
from broker.dsp.documents import PROVIDER_PID, PUSH_FORMAT, ProtocolError
from broker.dsp.messages import TransferMessage, TransferRequest
from broker.dsp.models import ProtocolTransfer, ProtocolTransferEvent
from broker.dsp.transfer_states import IllegalMove, Move, Party, State, next_state
from broker.errors import ProblemError
from broker.members import repository as members
from broker.negotiations import agreements
from broker.negotiations import repository as market
from broker.wire.statuses import TransferStatus

log = logging.getLogger("fedbroker.dsp")
PER_PASS = 50  # processes :func:`advance` looks at per step and pass
REJECTED = (
    "The broker rejected the data the provider sent under this agreement: it does not meet the "
    "F-SLA rules of the agreement and of both members' records"
)
ENDED_BY_PROVIDER = "The provider ended the transfer process"


def document(found: ProtocolTransfer) -> dict:
    return documents.transfer_process(found.id, found.consumer_pid, found.state)


def pids(found: ProtocolTransfer) -> dict[str, str]:
    return {"providerPid": PROVIDER_PID + found.id, "consumerPid": found.consumer_pid}


def request(
    session: Session, caller: Caller, message: TransferRequest, settings: Settings
) -> tuple[ProtocolTransfer, bool]:
    """A TransferRequestMessage: a new process (REQUESTED), or, with a consumerPid already
    used, the one it started; and whether it is new."""
    named = {"consumerPid": message.consumer_pid}
    agreement_id = _agreement_id(message.agreement_id)
    earlier = repository.by_consumer_pid(session, caller.member_id, message.consumer_pid)
    if earlier is not None:
        if earlier.agreement_id != agreement_id:
            raise ProtocolError(
                400,
                "This consumerPid already names a transfer process under another agreement: "
                "use a new consumerPid for a new process",
                pids(earlier),
            )
        return earlier, False
    agreement = market.agreement(session, agreement_id) if agreement_id else None
    if agreement is None or agreement.consumer_id != caller.member_id:
        raise ProtocolError(404, "No agreement with that agreementId of which you are the consumer")
    if message.format != PUSH_FORMAT:
        raise ProtocolError(
            400,
            f"Unsupported format: the broker delivers the data to your member's registered "
            f"inbox, pushed over HTTP ({PUSH_FORMAT})",
            named,
        )
    why = settings.inbox_policy.refusal(message.callback_address)
    if why is not None:
        raise ProtocolError(400, f"callbackAddress refused: {why}", named)
    member = members.get(session, caller.member_id)
    address = message.data_address
    elsewhere = address is not None and address.endpoint is not None
    if elsewhere and _url(address.endpoint) != _url(member.inbox_url):
        raise ProtocolError(
            400,
            "dataAddress: the broker delivers only to the inbox registered for your member "
            "(where it knows the data goes, and which jurisdiction's rules apply); name "
            "that inbox or send no dataAddress",
            named,
        )
    try:
        agreements.usable(session, agreement.id)
    except ProblemError as refused:
        raise ProtocolError(400, refused.detail, named) from None
    now = datetime.now(UTC)
    found = ProtocolTransfer(
        id=str(uuid.uuid4()),
        agreement_id=agreement.id,
        consumer_id=caller.member_id,
        provider_id=agreement.provider_id,
        consumer_pid=message.consumer_pid,
        callback_address=message.callback_address,
        format=PUSH_FORMAT,
        state=State.REQUESTED,
        created_at=now,
        updated_at=now,
        sent_event_id=0,
        attempts=0,
    )
    try:
        repository.add(session, found)
        _event(session, found, Move.REQUEST, Party.CONSUMER, State.REQUESTED, now)
        agreements.notify(
            session,
            agreement.provider_id,
            "transfer.requested",
            found.id,
            f"{caller.member_id} asks for the data of agreement {agreement.id} (transfer "
            f"process {found.id}): send it with POST /v1/transfers, agreement_id "
            f"{agreement.id}, destination {caller.member_id}; the broker delivers it to "
            f"{caller.member_id}'s registered inbox",
        )
        session.commit()
    except IntegrityError:  # the same consumerPid raced us: answer as the winner did
        session.rollback()
        earlier = repository.by_consumer_pid(session, caller.member_id, message.consumer_pid)
        if earlier is None or earlier.agreement_id != agreement.id:
            raise
        return earlier, False
    return found, True


def get(session: Session, caller: Caller, provider_pid: str) -> ProtocolTransfer:
    """A process its consumer and its provider may read; 404 for anyone else."""
    found = repository.process(session, _process_id(provider_pid))
    if found is None or caller.member_id not in (found.consumer_id, found.provider_id):
        raise ProtocolError(404, "No transfer process with that providerPid in which you take part")
    return found


def move(
    session: Session, caller: Caller, provider_pid: str, move_: Move, message: TransferMessage
) -> ProtocolTransfer:
    """A message on a process from its consumer (start to resume, completion, suspension,
    termination) or its provider member (termination: its start and completion are the
    broker's delivery)."""
    found = get(session, caller, provider_pid)
    if message.type != move_:
        raise ProtocolError(400, f"This path takes a {move_}", pids(found))
    if (
        message.provider_pid != PROVIDER_PID + found.id
        or message.consumer_pid != found.consumer_pid
    ):
        raise ProtocolError(
            400, "The message's providerPid and consumerPid must be the process's", pids(found)
        )
    party = Party.CONSUMER if caller.member_id == found.consumer_id else Party.PROVIDER
    if party == Party.PROVIDER and move_ != Move.TERMINATE:
        raise ProtocolError(
            400,
            "The provider's start and completion are the broker's delivery: send the data with "
            "POST /v1/transfers under the agreement",
            pids(found),
        )
    before = State(found.state)
    try:
        after = next_state(before, move_, party)
    except IllegalMove as illegal:
        raise ProtocolError(400, str(illegal), pids(found)) from None
    if move_ == Move.START:  # a resumption: only under an agreement in force
        try:
            agreements.usable(session, found.agreement_id)
        except ProblemError as refused:
            raise ProtocolError(400, refused.detail, pids(found)) from None
    now = datetime.now(UTC)
    if not repository.moved(session, found.id, before, after, now):
        session.rollback()
        raise ProtocolError(
            400, "The transfer process changed meanwhile: read it again", pids(found)
        )
    reason = ENDED_BY_PROVIDER if party == Party.PROVIDER else None
    _event(session, found, move_, party, after, now, reason)
    if party == Party.CONSUMER:
        agreements.notify(
            session,
            found.provider_id,
            f"transfer.{after.lower()}",
            found.id,
            f"{found.consumer_id}'s connector sent a {move_} on transfer process {found.id} "
            f"(agreement {found.agreement_id}): it is {after}",
        )
    session.commit()
    session.refresh(found)
    return found


def advance(session: Session) -> int:
    """Tie processes to the ``/v1`` side (see the module's docstring): link each waiting
    process to the transfer that carries its data, end it if that was rejected, and start and
    complete each whose delivery arrived. The number of processes moved; commits."""
    moved = 0
    for found in repository.waiting_for_data(session, PER_PASS):
        decided = repository.next_decision(session, found)
        if decided is None:
            continue
        now = datetime.now(UTC)
        carried = f"Transfer {decided.id} carries transfer process {found.id}"
        if decided.status == TransferStatus.REJECTED:
            after = State.TERMINATED
            if repository.linked(session, found.id, decided.id, now, after):
                _event(session, found, Move.TERMINATE, Party.PROVIDER, after, now, REJECTED)
                _tell_provider(session, found, "terminated", after, f"{carried}; it was rejected")
                moved += 1
        elif repository.linked(session, found.id, decided.id, now):
            waits = f"{carried}; it waits for its delivery"
            _tell_provider(session, found, "linked", State.REQUESTED, waits)
            moved += 1
        session.commit()
    for found in repository.delivered(session, PER_PASS):
        now = datetime.now(UTC)
        if repository.moved(session, found.id, State.REQUESTED, State.COMPLETED, now):
            _event(session, found, Move.START, Party.PROVIDER, State.STARTED, now)
            _event(session, found, Move.COMPLETE, Party.PROVIDER, State.COMPLETED, now)
            delivered = f"Transfer {found.transfer_id} reached {found.consumer_id}'s inbox"
            _tell_provider(session, found, "completed", State.COMPLETED, delivered)
            moved += 1
        session.commit()
    return moved


def _tell_provider(
    session: Session, found: ProtocolTransfer, kind: str, state: State, detail: str
) -> None:
    """A ``transfer.<kind>`` notification to the process's provider member, in the broker's
    words."""
    agreements.notify(
        session,
        found.provider_id,
        f"transfer.{kind}",
        found.id,
        f"{detail} (agreement {found.agreement_id}): the process is {state}",
    )


def advance_due(factory: sessionmaker[Session]) -> int:
    """:func:`advance` in a session of its own: the job runner's chore."""
    with factory() as session:
        try:
            moved = advance(session)
        except IntegrityError:  # another broker linked the same transfer first: next pass
            session.rollback()
            return 0
    if moved:
        log.info("moved %d transfer process(es)", moved)
    return moved


def _event(
    session: Session,
    found: ProtocolTransfer,
    move_: Move,
    party: Party,
    state: State,
    moment: datetime,
    reason: str | None = None,
) -> None:
    repository.add(
        session,
        ProtocolTransferEvent(
            process_id=found.id,
            party=party,
            move=move_,
            state=state,
            reason=reason,
            created_at=moment,
        ),
    )


def _agreement_id(named: str) -> str | None:
    """The agreement an agreementId names: as the broker's agreement message writes it
    (``urn:uuid:<id>``), or its bare id."""
    found = named.removeprefix(PROVIDER_PID)
    return found if 0 < len(found) <= 36 else None


def _process_id(provider_pid: str) -> str:
    found = provider_pid.removeprefix(PROVIDER_PID)
    if found == provider_pid or len(found) > 36:
        raise ProtocolError(404, "No transfer process with that providerPid in which you take part")
    return found


def _url(address: str) -> str:
    return address.strip().rstrip("/")
