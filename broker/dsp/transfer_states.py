"""The transfer process's state machine, as the Dataspace Protocol (release 2025-1) draws it.

The consumer asks for the data an agreement covers; the provider starts the transfer, and
either party may suspend, resume, complete or end it. Here the broker is the provider's agent:
the provider member sends the data on ``/v1/transfers``, the broker decides, and its delivery
to the consumer member's registered inbox is the provider's start and completion (one signed
message, delivered once: a push of finite data).

===========  ===============================  ===================  ==============================
message      Dataspace Protocol message       who                  from -> to
===========  ===============================  ===================  ==============================
``request``  TransferRequestMessage           consumer             (new) -> REQUESTED
``start``    TransferStartMessage             provider             REQUESTED -> STARTED
             (to resume)                      consumer, provider   SUSPENDED -> STARTED
``complete`` TransferCompletionMessage        consumer, provider   STARTED -> COMPLETED
``suspend``  TransferSuspensionMessage        consumer, provider   STARTED -> SUSPENDED
``terminate`` TransferTerminationMessage      consumer, provider   REQUESTED, STARTED,
                                                                   SUSPENDED -> TERMINATED
===========  ===============================  ===================  ==============================

COMPLETED and TERMINATED are final. Pure: :func:`next_state` answers or raises
:class:`IllegalMove`, which names the state the process is in and what it accepts there.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    REQUESTED = "REQUESTED"
    STARTED = "STARTED"
    SUSPENDED = "SUSPENDED"
    COMPLETED = "COMPLETED"
    TERMINATED = "TERMINATED"


class Party(StrEnum):
    CONSUMER = "consumer"  # the member that asked for the data (the agreement's consumer)
    PROVIDER = "provider"  # the agreement's provider, or the broker delivering for it


class Move(StrEnum):
    REQUEST = "TransferRequestMessage"
    START = "TransferStartMessage"
    COMPLETE = "TransferCompletionMessage"
    SUSPEND = "TransferSuspensionMessage"
    TERMINATE = "TransferTerminationMessage"


FINAL = frozenset({State.COMPLETED, State.TERMINATED})
BOTH = frozenset(Party)
# (state, message) -> (who may send it, the state it leads to)
TRANSITIONS: dict[tuple[State | None, Move], tuple[frozenset[Party], State]] = {
    (None, Move.REQUEST): (frozenset({Party.CONSUMER}), State.REQUESTED),
    (State.REQUESTED, Move.START): (frozenset({Party.PROVIDER}), State.STARTED),
    (State.SUSPENDED, Move.START): (BOTH, State.STARTED),
    (State.STARTED, Move.COMPLETE): (BOTH, State.COMPLETED),
    (State.STARTED, Move.SUSPEND): (BOTH, State.SUSPENDED),
    (State.REQUESTED, Move.TERMINATE): (BOTH, State.TERMINATED),
    (State.STARTED, Move.TERMINATE): (BOTH, State.TERMINATED),
    (State.SUSPENDED, Move.TERMINATE): (BOTH, State.TERMINATED),
}


class IllegalMove(ValueError):
    """A message the process's state does not accept, or not from this party."""


def next_state(state: State | None, move: Move, party: Party) -> State:
    """The state ``move`` sent by ``party`` leads to from ``state``.

    Examples
    --------
    >>> next_state(State.REQUESTED, Move.START, Party.PROVIDER)
    <State.STARTED: 'STARTED'>
    >>> next_state(State.REQUESTED, Move.START, Party.CONSUMER)
    Traceback (most recent call last):
    ...
    broker.dsp.transfer_states.IllegalMove: A transfer process in state REQUESTED takes a TransferStartMessage from the provider only
    """  # noqa: E501
    found = TRANSITIONS.get((state, move))
    if found is None:
        accepted = sorted(m for (s, m) in TRANSITIONS if s == state)
        raise IllegalMove(
            f"A transfer process in state {state} does not take a {move}"
            + (f"; it takes {', '.join(accepted)}" if accepted else " (it has ended)")
        )
    senders, after = found
    if party not in senders:
        [only] = senders
        raise IllegalMove(
            f"A transfer process in state {state} takes a {move} from the {only} only"
        )
    return after
