"""The contract negotiation's state machine, as the Eclipse Dataspace Protocol defines it.

States (:class:`~broker.wire.statuses.NegotiationState`): REQUESTED, OFFERED, ACCEPTED, AGREED,
VERIFIED, FINALIZED, TERMINATED. The consumer asks for a dataset (a contract request), the
provider offers terms, the consumer accepts; the provider's agreement follows, the consumer
verifies it, the provider finalizes it. Here the broker stands between the two as the
compliance authority: it checks the request against both F-SLA records, records and signs the
agreement, and finalizes it once the consumer has verified the signature, so the messages the
protocol gives the provider after its offer (agreement, finalization) are the broker's.

==============  ==========================  =========  ==========================================
message         Dataspace Protocol message  who        from -> to
==============  ==========================  =========  ==========================================
``request``     ContractRequestMessage      consumer   (new) -> REQUESTED; OFFERED -> REQUESTED
``offer``       ContractOfferMessage        provider   REQUESTED -> OFFERED
``accept``      ...EventMessage (ACCEPTED)  consumer   OFFERED -> ACCEPTED
``agree``       ContractAgreementMessage    broker     ACCEPTED -> AGREED
``verify``      ...VerificationMessage      consumer   AGREED -> VERIFIED
``finalize``    ...EventMessage (FINALIZED) broker     VERIFIED -> FINALIZED
``terminate``   ...TerminationMessage       any        any state but the final ones -> TERMINATED
==============  ==========================  =========  ==========================================

Pure: :func:`next_state` answers or raises :class:`IllegalTransition`, which names the state
the negotiation is in and the messages it accepts there.
"""

from __future__ import annotations

from enum import StrEnum

from broker.wire.statuses import NegotiationState as S


class Role(StrEnum):
    CONSUMER = "consumer"  # the member that asks for the data (the transfer's destination)
    PROVIDER = "provider"  # the member that holds it (the transfer's source)
    BROKER = "broker"


class Message(StrEnum):
    REQUEST = "request"
    OFFER = "offer"
    ACCEPT = "accept"
    AGREE = "agree"
    VERIFY = "verify"
    FINALIZE = "finalize"
    TERMINATE = "terminate"


# The protocol's name of each message, for the negotiation's history.
PROTOCOL_MESSAGES = {
    Message.REQUEST: "ContractRequestMessage",
    Message.OFFER: "ContractOfferMessage",
    Message.ACCEPT: "ContractNegotiationEventMessage",
    Message.AGREE: "ContractAgreementMessage",
    Message.VERIFY: "ContractAgreementVerificationMessage",
    Message.FINALIZE: "ContractNegotiationEventMessage",
    Message.TERMINATE: "ContractNegotiationTerminationMessage",
}

FINAL = frozenset({S.FINALIZED, S.TERMINATED})

# (state, message) -> (who may send it, the state it leads to); None: a new negotiation.
TRANSITIONS: dict[tuple[S | None, Message], tuple[frozenset[Role], S]] = {
    (None, Message.REQUEST): (frozenset({Role.CONSUMER}), S.REQUESTED),
    (S.OFFERED, Message.REQUEST): (frozenset({Role.CONSUMER}), S.REQUESTED),
    (S.REQUESTED, Message.OFFER): (frozenset({Role.PROVIDER}), S.OFFERED),
    (S.OFFERED, Message.ACCEPT): (frozenset({Role.CONSUMER}), S.ACCEPTED),
    (S.ACCEPTED, Message.AGREE): (frozenset({Role.BROKER}), S.AGREED),
    (S.AGREED, Message.VERIFY): (frozenset({Role.CONSUMER}), S.VERIFIED),
    (S.VERIFIED, Message.FINALIZE): (frozenset({Role.BROKER}), S.FINALIZED),
    **{
        (state, Message.TERMINATE): (frozenset(Role), S.TERMINATED)
        for state in S
        if state not in FINAL
    },
}

# Who the negotiation waits for, in each state that is not final.
WAITING_FOR = {
    S.REQUESTED: Role.PROVIDER,
    S.OFFERED: Role.CONSUMER,
    S.ACCEPTED: Role.BROKER,
    S.AGREED: Role.CONSUMER,
    S.VERIFIED: Role.BROKER,
}


class IllegalTransition(ValueError):
    """A message the negotiation does not accept in its state, or from that party."""

    def __init__(self, state: S | None, message: Message, role: Role):
        self.state, self.message, self.role = state, message, role
        accepted = sorted(m for (s, m), (roles, _) in TRANSITIONS.items() if s == state)
        from_role = sorted(
            m for (s, m), (roles, _) in TRANSITIONS.items() if s == state and role in roles
        )
        where = "a new negotiation" if state is None else f"a negotiation in state {state}"
        if state in FINAL:
            why = f"{where} is over: it accepts no message"
        elif message in accepted:
            why = (
                f"in state {state} only the {_roles(state, message)} may send '{message}'; "
                f"the {role} may send {_quoted(from_role) or 'nothing'}"
            )
        else:
            why = f"{where} does not accept '{message}'; it accepts {_quoted(accepted)}"
        super().__init__(why)


def next_state(state: S | None, message: Message, role: Role) -> S:
    """The state ``message`` from ``role`` leads to; :class:`IllegalTransition` otherwise.

    >>> next_state(S.REQUESTED, Message.OFFER, Role.PROVIDER)
    <NegotiationState.OFFERED: 'OFFERED'>
    >>> next_state(S.REQUESTED, Message.ACCEPT, Role.CONSUMER)
    Traceback (most recent call last):
    ...
    broker.negotiations.states.IllegalTransition: a negotiation in state REQUESTED does not \
accept 'accept'; it accepts 'offer', 'terminate'
    """
    found = TRANSITIONS.get((state, message))
    if found is None or role not in found[0]:
        raise IllegalTransition(state, message, role)
    return found[1]


def _quoted(messages) -> str:
    return ", ".join(f"'{m}'" for m in messages)


def _roles(state: S | None, message: Message) -> str:
    return " or ".join(sorted(TRANSITIONS[(state, message)][0]))
