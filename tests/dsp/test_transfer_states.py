"""The transfer process's state machine against the Dataspace Protocol's (release 2025-1, its
figure ``transfer-process-state-machine.puml``), written out independently: every (state,
message, party) is tried, and only the protocol's transitions pass."""

import itertools

import pytest

from broker.dsp.transfer_states import IllegalMove, Move, Party, State, next_state

# [*] -> REQUESTED: C; REQUESTED -> STARTED: P; REQUESTED -> TERMINATED: C/P;
# STARTED -> COMPLETED, SUSPENDED, TERMINATED: P/C; SUSPENDED -> STARTED, TERMINATED: P/C.
EXPECTED = {
    (None, "TransferRequestMessage", "consumer"): "REQUESTED",
    ("REQUESTED", "TransferStartMessage", "provider"): "STARTED",
}
for party in ("consumer", "provider"):
    EXPECTED |= {
        ("REQUESTED", "TransferTerminationMessage", party): "TERMINATED",
        ("STARTED", "TransferCompletionMessage", party): "COMPLETED",
        ("STARTED", "TransferSuspensionMessage", party): "SUSPENDED",
        ("STARTED", "TransferTerminationMessage", party): "TERMINATED",
        ("SUSPENDED", "TransferStartMessage", party): "STARTED",
        ("SUSPENDED", "TransferTerminationMessage", party): "TERMINATED",
    }


@pytest.mark.parametrize(
    ("state", "move", "party"),
    list(itertools.product([None, *State], Move, Party)),
    ids=lambda v: str(v),
)
def test_only_the_protocols_transitions_pass(state, move, party):
    expected = EXPECTED.get((state and str(state), str(move), str(party)))
    if expected is None:
        with pytest.raises(IllegalMove, match=str(state)):
            next_state(state, move, party)
    else:
        assert next_state(state, move, party) == expected


@pytest.mark.parametrize("final", ["COMPLETED", "TERMINATED"])
def test_a_final_state_takes_nothing_and_says_so(final):
    for move, party in itertools.product(Move, Party):
        with pytest.raises(IllegalMove, match="it has ended"):
            next_state(State(final), move, party)
