"""The negotiation's state machine against the Dataspace Protocol's, written out independently:
every (state, message, party) is tried, and only the protocol's transitions pass."""

import itertools

import pytest

from broker.negotiations.states import IllegalTransition, Message, Role, next_state
from broker.wire.statuses import NegotiationState as S

# The contract negotiation of the Eclipse Dataspace Protocol, with the broker sending what the
# protocol gives the provider after its offer (the agreement and the finalization).
EXPECTED = {
    (None, "request", "consumer"): "REQUESTED",
    ("OFFERED", "request", "consumer"): "REQUESTED",
    ("REQUESTED", "offer", "provider"): "OFFERED",
    ("OFFERED", "accept", "consumer"): "ACCEPTED",
    ("ACCEPTED", "agree", "broker"): "AGREED",
    ("AGREED", "verify", "consumer"): "VERIFIED",
    ("VERIFIED", "finalize", "broker"): "FINALIZED",
}
for state in ("REQUESTED", "OFFERED", "ACCEPTED", "AGREED", "VERIFIED"):
    for role in ("consumer", "provider", "broker"):
        EXPECTED[(state, "terminate", role)] = "TERMINATED"


@pytest.mark.parametrize(
    ("state", "message", "role"),
    list(itertools.product([None, *S], Message, Role)),
    ids=lambda v: str(v),
)
def test_only_the_protocols_transitions_are_allowed(state, message, role):
    key = (None if state is None else str(state), str(message), str(role))
    if key in EXPECTED:
        assert next_state(state, message, role) == EXPECTED[key]
    else:
        with pytest.raises(IllegalTransition) as raised:
            next_state(state, message, role)
        if state is not None:
            assert str(state) in str(raised.value)  # the answer names where it stands


def test_the_refusal_says_what_the_state_accepts_and_from_whom():
    with pytest.raises(IllegalTransition, match="does not accept 'accept'; it accepts 'offer', "):
        next_state(S.REQUESTED, Message.ACCEPT, Role.CONSUMER)
    with pytest.raises(IllegalTransition, match="only the provider may send 'offer'; the consumer"):
        next_state(S.REQUESTED, Message.OFFER, Role.CONSUMER)
    with pytest.raises(IllegalTransition, match="is over: it accepts no message"):
        next_state(S.FINALIZED, Message.TERMINATE, Role.PROVIDER)
