"""Round 5 red team: pieces of an identifier, each clean alone, that a hostile member places
where the broker checked them one at a time, and digits it hides in numbers the broker echoes;
through a real broker, judged on what the other member receives or reads. Each case crossed
before the fix it names.

- **Class 5 (identifiers in content, split).** An aggregate release's declared keys, one piece
  per column of a contingency table (read now as a table's cells side by side), keys of key
  columns taken from the data, a catalog entry's keywords and column descriptions, a
  negotiation's columns, a protocol termination's reasons (lists read side by side now). Open,
  as strict expected failures: keys listed one after another (one column's keys, or two
  queries'), which read in a row refuse ordinary age bands and postcodes by chance.
- **Class 8 / 5 (sender-chosen numbers).** A release's ``epsilon`` (kept as the exact fraction
  written), a query's ``bounds`` and ``quantiles``, an offer's ``max_t``: at most 6 significant
  digits now, so a card number or a phone number no longer fits in one.
- **Class 15.** A 3 KB release of 500 quantiles held its request 45 s: at most 40 now.

Each test sends as a source of its own (budgets are per source and destination).
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pandas as pd
import pytest

from tests.adversarial.conftest import settle
from tests.adversarial.test_aggregate_releases import fresh_source

COLUMNS = [f"g{i}" for i in range(5)]
CARD = "4111111111111111"  # Luhn-valid test card
CARD_MC = "5105105105105100"  # Luhn-valid test card, four distinct groups
PHONE = "33612345678"  # +33 6 12 34 56 78


def table() -> bytes:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({c: rng.choice(["a", "b", "c"], 400) for c in COLUMNS})
    frame["age"] = rng.integers(1, 90, 400)
    return frame.to_csv(index=False).encode()


def release(broker, queries, epsilon="1"):
    return broker.post(
        table(),
        "data.csv",
        source=fresh_source(broker),
        kind="aggregate",
        queries=json.dumps(queries),
        epsilon=epsilon,
    )


def delivered_text(broker, response) -> str | None:
    """The document fr-research received (None when the release was refused, then checked to
    have delivered nothing)."""
    if response.status_code != 200:
        assert response.status_code in (400, 413, 422), response.text
        return None
    answer = response.json()
    if answer["status"] != "approved":
        settle(broker, answer)
        return None
    _headers, body = broker.delivered_for(answer["id"])
    return body.decode()


def delivered_keys(text: str) -> str:
    """Every declared key of every answer, in the order delivered, joined without separators."""
    parts = []
    for answer in json.loads(text)["answers"]:
        keys = answer["query"].get("keys") or {}
        for column in answer["query"].get("columns", []):
            parts.extend(k for k in keys.get(column, []) if k is not None)
    return re.sub(r"\s", "", "".join(parts))


def table_split(pieces: list[str]) -> list[dict]:
    columns = COLUMNS[: len(pieces)]
    keys = {c: [p] for c, p in zip(columns, pieces, strict=True)}
    return [{"type": "count_by", "columns": columns, "keys": keys}]


# Open: keys listed one after another (a column's, then the next query's) are not read side by
# side. Read so, ordinary keys refuse releases by chance: age bins "40-49", "50-59", ... spell a
# Luhn-valid card, lists of postcodes or 4-digit codes a checksummed national number. A
# contingency table's cells are read (in a share of them, as uploads' adjacent columns are).
_KEYS_IN_A_ROW = pytest.mark.xfail(
    strict=True,
    reason="open: declared keys listed in a row are not read side by side (chance hits on "
    "ordinary bins and codes); a contingency table's cells are",
)


@pytest.mark.parametrize(
    ("queries", "secret"),
    [
        (table_split(["4111", "1111", "1111", "1111"]), CARD),
        (table_split(["awa.diop", "@example.org"]), "awa.diop@example.org"),
        (table_split(["Awa", "Diop"]), "AwaDiop"),
        (table_split(["+33 6", "12 34", "56 78"]), "+" + PHONE),
        pytest.param(
            [
                {
                    "type": "count_by",
                    "columns": ["g0"],
                    "keys": {"g0": ["5105", "1051", "0510", "5100"]},
                }
            ],
            CARD_MC,
            marks=_KEYS_IN_A_ROW,
        ),
        pytest.param(
            [
                {"type": "count_by", "columns": ["g0"], "keys": {"g0": ["awa.diop"]}},
                {"type": "count_by", "columns": ["g1"], "keys": {"g1": ["@example.org"]}},
            ],
            "awa.diop@example.org",
            marks=_KEYS_IN_A_ROW,
        ),
    ],
    ids=[
        "card over 4 columns",
        "email over 2 columns",
        "full name over 2 columns",
        "phone over 3 columns",
        "card over the keys of 1 column",
        "email over 2 queries",
    ],
)
def test_an_identifier_split_over_declared_keys_does_not_cross(broker, queries, secret):
    text = delivered_text(broker, release(broker, queries))
    if text is None:
        return
    assert secret not in delivered_keys(text), (
        f"the destination reads {secret!r} from the declared keys it received, in order: "
        f"{delivered_keys(text)!r}"
    )


@pytest.mark.parametrize(
    ("queries", "epsilon", "secret"),
    [
        ([{"type": "count"}], f"{CARD}/{int(CARD) + 1}", CARD),
        ([{"type": "count"}], f"0.{CARD}", CARD),
        ([{"type": "sum", "column": "age", "bounds": [0, int(PHONE)]}], "1", PHONE),
        (
            [
                {
                    "type": "quantile",
                    "column": "age",
                    "bounds": [0, 120],
                    "quantiles": [float("0." + CARD)],
                }
            ],
            "1",
            CARD,
        ),
    ],
    ids=[
        "card as epsilon's numerator",
        "card as epsilon's decimals",
        "phone as a bound",
        "card in a quantile's decimals",
    ],
)
def test_sender_chosen_digits_in_a_releases_numbers_do_not_cross(broker, queries, epsilon, secret):
    text = delivered_text(broker, release(broker, queries, epsilon))
    if text is None:
        return
    assert secret not in text, (
        f"the destination received the sender's {secret!r} verbatim: "
        + ", ".join(sorted(set(re.findall(r"[\"\w./]*" + secret + r"[\w./]*\"?", text))))
    )


# --- the catalog: an identifier split over the fields of one entry ------------------------------
#
# A catalog entry is read in every jurisdiction and is not measured; each of its texts is searched
# by the identifier detector on its own, so pieces in two keywords, two purposes or two column
# descriptions pass, and fr-research reads them side by side in GET /v1/catalog.

ENTRY_COLUMNS = [
    {"name": "age_band", "role": "quasi_identifier"},
    {"name": "sex", "role": "quasi_identifier"},
    {"name": "diagnosis", "role": "sensitive"},
]


def _catalog_texts(broker, member, entry_id: str) -> str:
    """Every text of the entry as ``member`` reads it in the catalog, joined without blanks."""
    catalog = broker.as_member(member, "GET", "/v1/catalog", params={"limit": 100}).json()
    found = [d for d in catalog["dcat:dataset"] if d["dct:identifier"] == entry_id]
    assert found, f"entry {entry_id} not in fr-research's catalog"
    entry = found[0]
    texts = [
        *entry.get("dcat:keyword", []),
        *[c.get("dct:description", "") for c in entry.get("fedbroker:column", [])],
        json.dumps(entry, ensure_ascii=False),
    ]
    return re.sub(r"\s", "", "".join(t for t in texts if isinstance(t, str)))


@pytest.mark.parametrize(
    ("extra", "secret"),
    [
        ({"keywords": ["awa.diop", "@example.sn"]}, "awa.diop@example.sn"),
        ({"keywords": ["4111 1111", "1111 1111"]}, CARD),
        ({"keywords": ["Awa", "Diop"]}, "AwaDiop"),
        (
            {
                "columns": [
                    {"name": "a", "role": "other", "description": "awa.diop"},
                    {"name": "b", "role": "other", "description": "@example.sn"},
                ]
            },
            "awa.diop@example.sn",
        ),
    ],
    ids=[
        "email over 2 keywords",
        "card over 2 keywords",
        "full name over 2 keywords",
        "email over 2 column descriptions",
    ],
)
def test_an_identifier_split_over_a_catalog_entry_is_not_published(broker, extra, secret):
    from tests.adversarial.conftest import DESTINATION, SOURCE

    body = {"title": "admissions", "columns": ENTRY_COLUMNS, "purposes": ["research"], **extra}
    answer = broker.as_member(SOURCE, "POST", "/v1/catalog/datasets", json=body)
    if answer.status_code == 422:
        return  # refused, nothing stored: the secure answer
    assert answer.status_code == 201, answer.text
    seen = _catalog_texts(broker, DESTINATION, answer.json()["id"])
    assert secret not in seen, (
        f"fr-research reads {secret!r} in the catalog entry sn-hospital published: {extra}"
    )


# --- the market: pieces over a negotiation's column list, digits in an offer's terms -----------


def _entry(broker) -> str:
    from tests.adversarial.conftest import SOURCE

    body = {"title": "admissions", "columns": ENTRY_COLUMNS, "purposes": ["research"]}
    answer = broker.as_member(SOURCE, "POST", "/v1/catalog/datasets", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_an_email_split_over_a_negotiations_columns_does_not_reach_the_provider(broker):
    """fr-research asks for the columns ``awa.diop`` and ``@example.sn`` (each checked alone);
    sn-hospital reads them side by side in the negotiation's ``asked`` (and in the reason the
    broker writes) across the border."""
    from tests.adversarial.conftest import DESTINATION, SOURCE

    asked = {
        "dataset_id": _entry(broker),
        "purpose": "research",
        "columns": ["awa.diop", "@example.sn"],
    }
    answer = broker.as_member(DESTINATION, "POST", "/v1/negotiations", json=asked)
    if answer.status_code == 422:
        return
    shown = broker.as_member(SOURCE, "GET", f"/v1/negotiations/{answer.json()['id']}").json()
    columns = "".join((shown.get("asked") or {}).get("columns") or [])
    assert "awa.diop@example.sn" not in columns, (
        f"sn-hospital reads the consumer's columns {shown['asked']['columns']} as "
        "'awa.diop@example.sn'"
    )


def test_a_card_number_in_an_offers_max_t_does_not_reach_the_consumer(broker):
    """sn-hospital offers ``max_t`` 0.4111111111111111: fr-research reads the card number
    4111111111111111 in the offered terms, digit for digit."""
    from tests.adversarial.conftest import DESTINATION, SOURCE

    asked = {"dataset_id": _entry(broker), "purpose": "research"}
    negotiation = broker.as_member(DESTINATION, "POST", "/v1/negotiations", json=asked).json()["id"]
    offer = {"terms": {"max_t": float("0." + CARD)}}
    answer = broker.as_member(SOURCE, "POST", f"/v1/negotiations/{negotiation}/offer", json=offer)
    if answer.status_code == 422:
        return
    shown = broker.as_member(DESTINATION, "GET", f"/v1/negotiations/{negotiation}").text
    assert CARD not in shown, "fr-research reads the provider's 4111111111111111 in the offer"


# --- keys taken from the data: an identifier over the columns of a contingency table -----------

_PICK = np.random.default_rng(21).integers(0, 3, 900)
_CARDS = [CARD, "5555555555554444", CARD_MC]
_FIRSTS, _LASTS = ["Awa", "Moussa", "Fatou"], ["Diop", "Fall", "Ndiaye"]
_PHONES = [("+221 77", "123", "45 67"), ("+221 77", "765", "43 21"), ("+221 77", "555", "12 12")]
_DATA_SPLITS = {
    "full name over 2 columns": (
        pd.DataFrame(
            {
                "given": np.random.default_rng(22).choice(_FIRSTS, 900),
                "family": np.random.default_rng(23).choice(_LASTS, 900),
            }
        ),
        {f"{a}{b}" for a in _FIRSTS for b in _LASTS},
    ),
    "card over 4 columns": (
        pd.DataFrame(
            {c: [_CARDS[p][4 * i : 4 * i + 4] for p in _PICK] for i, c in enumerate("abcd")}
        ),
        set(_CARDS),
    ),
    "phone over 3 columns": (
        pd.DataFrame({c: [_PHONES[p][i] for p in _PICK] for i, c in enumerate("abc")}),
        {"".join(p).replace(" ", "") for p in _PHONES},
    ),
}


@pytest.mark.parametrize("case", list(_DATA_SPLITS))
def test_an_identifier_over_columns_does_not_cross_as_data_keys(broker, case):
    """A contingency table over the pieces, its keys taken from the data (above the threshold):
    each column alone does not look like an identifier to the key check, so fr-research
    receives cells keyed ``["Awa", "Diop"]``, ``["4111", "1111", "1111", "1111"]`` or
    ``["+221 77", "123", "45 67"]``. An upload of the same columns is refused
    (``test_round4_forms.py``: names far apart, an identifier over 3 or 4 adjacent columns)."""
    frame, secrets = _DATA_SPLITS[case]
    frame = frame.assign(age=np.random.default_rng(24).integers(1, 90, len(frame)))
    columns = [c for c in frame.columns if c != "age"]
    response = broker.post(
        frame.to_csv(index=False).encode(),
        "data.csv",
        source=fresh_source(broker),
        kind="aggregate",
        queries=json.dumps([{"type": "count_by", "columns": columns}]),
        epsilon="1",
        delta="1e-6",
    )
    text = delivered_text(broker, response)
    if text is None:
        return
    cells = json.loads(text)["answers"][0]["result"].get("cells") or []
    joined = {re.sub(r"\s", "", "".join(c["key"])) for c in cells}
    assert not joined & secrets, f"fr-research received, cell by cell: {sorted(joined & secrets)}"


# --- class 15: a 3 KB upload and a few kilobytes of queries hold the broker for minutes -------


def test_a_tiny_release_of_many_quantiles_is_bounded(broker):
    """1,000 rows (3 KB of CSV) and 25 quantile queries of 20 quantiles over 1,000 candidates,
    every one within the limits of ``broker.privacy.queries`` (which allow 50 such queries): the
    broker calibrates and scores 500 exponential mechanisms in the request, with no time or work
    budget (measured: 5 such queries take 7 to 11 s, dry run or not), while the member waits.
    The secure answer is a clear 4xx (too costly) or a decision, well within 20 s.

    When the client gives up, the test waits until the broker has finished (the release appears
    in the source's transfers), so no work is left running in the session's broker."""
    import httpx

    source = fresh_source(broker)
    rng = np.random.default_rng(31)
    data = pd.DataFrame({"age": rng.integers(0, 120, 1_000)}).to_csv(index=False).encode()
    query = {
        "type": "quantile",
        "column": "age",
        "bounds": [0, 120],
        "candidates": 1_000,
        "quantiles": [round(0.02 + i * 0.048, 3) for i in range(20)],
    }
    started = time.monotonic()
    try:
        response = broker.post(
            data,
            "data.csv",
            source=source,
            kind="aggregate",
            queries=json.dumps([query] * 25),
            epsilon="1",
            timeout=20,
        )
    except httpx.TimeoutException:
        waited = time.monotonic() - started
        while time.monotonic() - started < 300:  # let the broker finish before the next test
            listed = broker.as_member(source, "GET", "/v1/transfers", params={"limit": 1}).json()
            if listed.get("total"):
                break
            time.sleep(1)
        pytest.fail(
            f"a {len(data):,}-byte upload with 25 quantile queries held its request for more "
            f"than {waited:.0f} s without an answer (no work budget; it took "
            f"{time.monotonic() - started:.0f} s in all)"
        )
    assert response.status_code in (200, 413, 422), response.text


# --- the Dataspace Protocol: a termination's reasons, each checked alone -----------------------


@pytest.mark.parametrize(
    ("reasons", "secret"),
    [
        (["awa.diop", "@example.sn"], "awa.diop@example.sn"),
        (["4111 1111", "1111 1111"], CARD),
    ],
    ids=["email over 2 reasons", "card over 2 reasons"],
)
def test_an_identifier_split_over_a_protocol_termination_does_not_reach_the_provider(
    broker, reasons, secret
):
    """fr-research's connector ends a protocol negotiation with the reasons ``["awa.diop",
    "@example.sn"]``: the broker joins them (``"; "``) into the reason sn-hospital reads on
    ``/v1/negotiations/{id}``, and its check does not see the e-mail address (or the card) it
    spells. One reason holding the whole address is refused
    (``test_an_identifier_in_a_termination_reason_is_refused``)."""
    import copy

    from tests.adversarial.conftest import DESTINATION, SOURCE
    from tests.broker.test_dsp import BASE, example, initial_request

    entry = _entry(broker)
    message = initial_request(entry)
    message["consumerPid"] = f"urn:uuid:{entry}"
    started = broker.as_member(DESTINATION, "POST", BASE + "/negotiations/request", json=message)
    assert started.status_code == 201, started.text
    provider_pid = started.json()["providerPid"]
    ending = copy.deepcopy(
        example("negotiation/example/contract-negotiation-termination-message.json")
    )
    ending.update(providerPid=provider_pid, consumerPid=message["consumerPid"], reason=reasons)
    answer = broker.as_member(
        DESTINATION, "POST", f"{BASE}/negotiations/{provider_pid}/termination", json=ending
    )
    if answer.status_code == 400:
        return  # refused, nothing recorded
    negotiation = provider_pid.removeprefix("urn:uuid:")
    reason = (
        broker.as_member(SOURCE, "GET", f"/v1/negotiations/{negotiation}").json()["reason"] or ""
    )
    assert secret not in re.sub(r"[\s;]", "", reason), f"sn-hospital reads {reason!r}"
