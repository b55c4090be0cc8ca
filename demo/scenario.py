"""The demo scenario: transfers between member clouds that show the three decisions, then a
negotiated exchange through the federation's catalog.

Run by ``make demo`` (through ``demo.federation``) and by the ``scenario`` service of
docker-compose, with the same command and variables:

    SCENARIO_BROKER_URL=http://127.0.0.1:8000 SCENARIO_ADMIN_TOKEN=... \\
    SCENARIO_MEMBERS=sn-hospital=http://127.0.0.1:8101,fr-research=http://127.0.0.1:8102,... \\
    SCENARIO_MEMBER_TOKEN=... python -m demo.scenario

(``SCENARIO_MEMBER_TOKEN``: the member clouds' ``MEMBER_LOCAL_TOKEN``, when they have one.)

It talks to the member clouds' own APIs (upload a dataset, ask for a transfer, read the inbox,
publish in the catalog, negotiate), as an operator of each cloud would, and prints what was
decided and why.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

import httpx

from fedbroker.client import Client, plain

QI = ["Age", "Gender"]
SENSITIVE = ["Disease"]


@dataclass(frozen=True)
class Step:
    title: str
    source: str
    destination: str
    dataset: str
    purpose: str
    anonymize: str = "none"


STEPS = [
    Step(
        "The paper's anonymized Table 1, without NIN and Name",
        "sn-hospital",
        "fr-research",
        "patients_published.csv",
        "research",
    ),
    Step(
        "The raw patient table", "sn-hospital", "fr-research", "patients_original.csv", "research"
    ),
    Step(
        "The raw patient table, anonymized by the broker",
        "sn-hospital",
        "fr-research",
        "patients_original.csv",
        "research",
        anonymize="auto",
    ),
    Step(
        "The anonymized table, for marketing",
        "sn-hospital",
        "ng-health",
        "patients_published.csv",
        "marketing",
    ),
]


def parse_members(text: str) -> dict[str, str]:
    """``"a=http://x,b=http://y"`` -> ``{"a": "http://x", "b": "http://y"}``."""
    members = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        member_id, sep, url = item.partition("=")
        if not sep or not url:
            raise ValueError(f"SCENARIO_MEMBERS: {item!r} is not member-id=URL")
        members[member_id.strip()] = url.strip().rstrip("/")
    return members


def wait_until_up(urls: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    for url in urls:
        while True:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
            time.sleep(0.2)


def run(
    broker_url: str, admin_token: str, members: dict[str, str], member_token: str | None = None
) -> list[dict[str, Any]]:
    """Play every step; returns the broker's answers, with where each delivery ended up."""
    headers = {"Authorization": f"Bearer {member_token}"} if member_token else {}
    with httpx.Client(timeout=60, headers=headers) as http:
        for member_url in {members[s.source] for s in [*STEPS, NEGOTIATED]}:
            for name in sorted({s.dataset for s in [*STEPS, NEGOTIATED]}):
                data = resources.files("demo.sample_data").joinpath(name).read_bytes()
                answer = http.post(
                    f"{member_url}/datasets", files={"file": (name, data)}, data={"replace": "true"}
                )
                answer.raise_for_status()
        results = []
        for step in STEPS:
            answer = http.post(
                f"{members[step.source]}/transfers",
                json={
                    "dataset": step.dataset,
                    "destination": step.destination,
                    "purpose": step.purpose,
                    "quasi_identifiers": QI,
                    "sensitive": SENSITIVE,
                    "anonymize": step.anonymize,
                },
            )
            answer.raise_for_status()
            results.append({"step": step, "answer": answer.json()})
        results.append(negotiate(http, members))
        with Client(broker_url, admin_token) as broker:
            for result in results:
                result["answer"] = _settled(broker, result["answer"])
                result["inbox"] = _inbox_entry(
                    http, members.get(result["step"].destination), result["answer"]["id"]
                )
    return results


NEGOTIATED = Step(
    "A negotiated exchange: fr-research finds sn-hospital's admissions in the catalog",
    "sn-hospital",
    "fr-research",
    "admissions_2025.csv",  # 400 synthetic admissions: NIN, Name, Age, Gender, Region, Disease
    "research",
    anonymize="auto",
)
NEGOTIATED_QI = ["Age", "Gender", "Region"]


def negotiate(http: httpx.Client, members: dict[str, str]) -> dict[str, Any]:
    """sn-hospital publishes its admissions table in the catalog (the broker measures it, keeps
    the figures); fr-research finds it and asks for it for research, for a year; sn-hospital
    offers stricter terms than the records require (k = 5, and neither names nor national ids);
    fr-research accepts and confirms once it has checked the broker's signature; sn-hospital
    sends the table under the agreement, which the broker anonymizes to its terms."""
    step = NEGOTIATED
    provider, consumer = members[step.source], members[step.destination]

    def call(method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        answer = http.request(method, url, **kwargs)
        answer.raise_for_status()
        return answer.json()

    entry = call(
        "POST",
        f"{provider}/catalog",
        json={
            "dataset": step.dataset,
            "title": "Hospital admissions in Senegal, 2025",
            "description": "One row an admission: age, sex, region and the diagnosis",
            "keywords": ["health", "admissions"],
            "purposes": ["research", "public_health"],
            "quasi_identifiers": NEGOTIATED_QI,
            "sensitive": SENSITIVE,
        },
    )
    found = call(
        "GET", f"{consumer}/catalog", params={"provider": step.source, "q": "admissions senegal"}
    )
    [dataset] = [d for d in found["dcat:dataset"] if d["dct:identifier"] == entry["id"]]
    asked = call(
        "POST",
        f"{consumer}/negotiations",
        json={"dataset_id": entry["id"], "purpose": step.purpose, "retention_days": 365},
    )
    negotiation = asked["id"]
    offered = call(
        "POST",
        f"{provider}/negotiations/{negotiation}/offer",
        json={"terms": {"min_k": 5, "columns": [*NEGOTIATED_QI, *SENSITIVE]}},
    )
    call("POST", f"{consumer}/negotiations/{negotiation}/accept")
    final = call("POST", f"{consumer}/negotiations/{negotiation}/verify")
    answer = call(
        "POST",
        f"{provider}/transfers",
        json={
            "dataset": step.dataset,
            "destination": step.destination,
            "purpose": step.purpose,
            "quasi_identifiers": NEGOTIATED_QI,
            "sensitive": SENSITIVE,
            "anonymize": step.anonymize,
            "agreement_id": final["agreement_id"],
        },
    )
    return {
        "step": step,
        "answer": answer,
        "negotiation": {
            "offers": dataset.get("odrl:hasPolicy", []),
            "required": asked["required"]["terms"],
            "offered": offered["offered"],
            "states": [e["state"] for e in final["events"]],
            "agreement": final["agreement_id"],
        },
    }


def _settled(broker: Client, answer: dict, timeout: float = 30.0) -> dict:
    """Wait until an approved transfer's delivery is delivered or failed (held: its
    destination is down, and it goes out once it is up)."""
    deadline = time.monotonic() + timeout
    while answer["delivery"]["status"] in ("pending", "held") and time.monotonic() < deadline:
        time.sleep(0.2)
        answer = plain(broker.get_transfer(answer["id"]))
    return answer


def _inbox_entry(http: httpx.Client, member_url: str | None, transfer_id: str) -> dict | None:
    if member_url is None:
        return None
    answer = http.get(f"{member_url}/inbox/{transfer_id}/meta")
    return answer.json() if answer.status_code == 200 else None


# A delivery's state in words (the API's values are for programs).
DELIVERY_WORDS = {
    "not_applicable": "none (nothing leaves)",
    "pending": "pending (the broker is delivering it)",
    "held": "held until the destination is back up",
    "delivered": "delivered",
    "failed": "failed (the broker gave up; see the transfer's delivery)",
}


def summary(results: list[dict[str, Any]]) -> str:
    """What a person reads: the decision, the rules that failed and the figures behind them."""
    lines = []
    for number, result in enumerate(results, 1):
        step, answer = result["step"], result["answer"]
        lines.append(
            f"{number}. {step.title}: {step.source} -> {step.destination}, purpose "
            f"{step.purpose!r}, anonymize={step.anonymize}"
        )
        negotiation = result.get("negotiation")
        if negotiation:
            lines += _negotiation_lines(negotiation)
        lines.append(
            f"   decision: {answer['status'].upper()}   (policies "
            + ", ".join(f"{j} v{v}" for j, v in answer["policy_versions"].items())
            + ")"
        )
        qi = (answer.get("report") or {}).get("quasi_identifiers")
        if qi:
            lines.append(
                f"   measured: k = {qi['k']} on {' + '.join(qi['attributes'])}, Mmaq index "
                f"{qi['mmaq_index']:.2f} (0 anonymous, 1 identifying), largest "
                f"re-identification risk {qi['prosecutor_risk']['max']:.2f}"
            )
        # One line per problem, merged across rules and jurisdictions, as the decision's own
        # summary (and its HTML page) gives them; `rules` in the answer holds each rule.
        for entry in answer.get("summary") or []:
            if entry["kind"] == "problem":
                lines.append(f"   problem: {entry['problem']}")
                lines.append(f"      what to do: {entry['do']}")
            else:  # nothing to fix: what happened, or a hint
                lines.append(f"   {entry['do'][:1].upper()}{entry['do'][1:]}")
        remedy = answer.get("remedy")
        if remedy and remedy.get("verified"):
            steps = "; ".join(
                f"{s['method']} {s['column'] or ''}".strip()
                + (f" k={s['parameters']['k']}" if "k" in s["parameters"] else "")
                for s in remedy["steps"]
            )
            verb = "applied" if remedy.get("applied") else "verified remedy"
            lines.append(f"   {verb}: {steps}")
            loss = remedy.get("information_loss")
            if loss:
                lines.append(
                    f"   information kept: {loss['utility_percent']:.1f}% (non-uniform entropy)"
                )
        delivery = answer["delivery"]
        inbox = result.get("inbox")
        where = (
            f"in {step.destination}'s inbox ({inbox['filename'] or 'data'}, "
            f"{'anonymized' if inbox['anonymized'] else 'as measured, written by the broker'})"
            if inbox
            else ""
        )
        state = DELIVERY_WORDS.get(delivery["status"], delivery["status"])
        lines.append(f"   delivery: {state} {where}".rstrip())
        if inbox and inbox.get("agreement"):
            lines.append(
                f"   under agreement {inbox['agreement']}; fr-research deletes it at "
                f"{inbox['retain_until']}"
            )
        lines.append("")
    return "\n".join(lines)


def _terms(terms: dict[str, Any]) -> str:
    asked = [
        f"{label} {terms[name]}"
        for name, label in (("min_k", "k >="), ("min_l", "l >="), ("max_t", "t <="))
        if terms.get(name) is not None
    ]
    if terms.get("retention_days"):
        asked.append(f"kept {terms['retention_days']} days")
    return ", ".join(asked) + f"; columns {', '.join(terms['columns'])}"


def _negotiation_lines(negotiation: dict[str, Any]) -> list[str]:
    kinds = [
        f"{o['odrl:permission'][0]['odrl:constraint'][0]['odrl:rightOperand']} "
        f"{o['fedbroker:offerKind']}"
        for o in negotiation["offers"]
    ]
    return [
        f"   catalog: fr-research could get it for {', '.join(kinds) or 'nothing'}",
        f"   the broker's terms: {_terms(negotiation['required'])}",
        f"   sn-hospital offers: {_terms(negotiation['offered'])}",
        f"   negotiation: {' -> '.join(negotiation['states'])} "
        f"(agreement {negotiation['agreement']}, signed by the broker, checked by fr-research)",
    ]


def main() -> int:
    try:
        broker_url = os.environ["SCENARIO_BROKER_URL"].rstrip("/")
        admin_token = os.environ["SCENARIO_ADMIN_TOKEN"]
        members = parse_members(os.environ["SCENARIO_MEMBERS"])
    except KeyError as missing:
        print(f"scenario: {missing.args[0]} is not set", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"scenario: {error}", file=sys.stderr)
        return 2
    try:
        wait_until_up([f"{broker_url}/readyz", *(f"{url}/livez" for url in members.values())])
        results = run(broker_url, admin_token, members, os.environ.get("SCENARIO_MEMBER_TOKEN"))
    except (RuntimeError, httpx.HTTPError) as error:
        print(f"scenario: {error}", file=sys.stderr)
        return 1
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
