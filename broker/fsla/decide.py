"""The transfer decision as a pure function: measure, federation rules, F-SLA rules, remedy.

:func:`decide` takes what the service read (the parties and their policy versions, the measured
table) and returns an :class:`Outcome`; nothing here touches a database or the network, so every
branch of a decision is testable on its own. The service around it reads, calls it, and writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from broker.columns.roles import Roles
from broker.engines.base import Engine
from broker.fsla.evaluate import applicable_rule_sets, combine, evaluate
from broker.fsla.hierarchies import followed
from broker.fsla.linkage import History, assess, lookback
from broker.fsla.models import FSLARecord
from broker.fsla.offers import Terms
from broker.fsla.remedy import Effort, VerifiedRemedy, find_remedy
from broker.fsla.results import RuleResult, TransferContext
from broker.fsla.rules import aggregate_instead, suda
from broker.fsla.stored import StoredBefore, StoredRemedy, StoredRule
from broker.metrics.mmaq import QUASI_IDENTIFIER
from broker.metrics.report import AnalysisReport, attribute_classes, report_of
from broker.wire.statuses import Anonymize, MemberStatus, TransferStatus

FEDERATION = "federation"
REQUEST = "request"  # a rule the request itself set (its utility floor)


@dataclass(frozen=True)
class TransferRequest:
    destination: str
    purpose: str
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    anonymize: str = "none"
    dry_run: bool = False
    idempotency_key: str | None = None
    person_key: str | None = None
    # The least information a remedy must keep (percent); the rule sets' floor still applies.
    min_utility_percent: float | None = None
    # The agreement the transfer is made under (its terms apply beside the records').
    agreement_id: str | None = None
    # microdata (the rows, measured and judged) or aggregate (statistics under differential
    # privacy: the queries as JSON text, the epsilon and delta as written)
    kind: str = "microdata"
    queries: str | None = None
    epsilon: str | None = None
    delta: str | None = None
    # Generalization hierarchies the sender gives (column of the table -> value -> labels from
    # level 1 up): the remedy follows them where no F-SLA record gives one (broker.fsla.hierarchies)
    hierarchies: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def measure(
    engine: Engine, declared: tuple[str, ...], sensitive: tuple[str, ...]
) -> tuple[AnalysisReport, tuple[str, ...], bool]:
    """The report, the quasi-identifiers it used, and whether the broker added any.

    One engine serves the first look (each attribute's class) and the report, so the table's
    values are encoded once.

    The sender's declaration can widen the check, never narrow it: the broker adds every
    non-sensitive attribute whose Mmaq class is ``quasi_identifier``. Identifiers are judged by
    their own rule and anonymous attributes separate no one, so nothing escapes the k, l and t
    rules by being left undeclared.
    """
    added = tuple(
        name
        for name, attribute_class in attribute_classes(engine).items()
        if attribute_class == QUASI_IDENTIFIER and name not in sensitive and name not in declared
    )
    quasi_identifiers = declared + added
    report = report_of(engine, quasi_identifiers, sensitive)
    return report, quasi_identifiers, bool(added)


@dataclass(frozen=True, eq=False)
class Outcome:
    """A decision with everything the answer and the delivery need."""

    status: str
    rules: list[RuleResult]
    remedy: StoredRemedy | None
    versions: dict[str, int]
    report: AnalysisReport
    anonymized: Engine | None = None  # the anonymized table that leaves instead
    # The verified remedy's table when it was offered, not applied: what a dry run shows.
    preview: Engine | None = None
    # How many days the destination may keep what leaves (the shortest limit that applies).
    retention_days: int | None = None


@dataclass(frozen=True)
class Agreed:
    """The agreement a transfer names, as its decision needs it."""

    id: str
    provider: str
    consumer: str
    terms: Terms


@dataclass(frozen=True)
class Onward:
    """An earlier delivery of the same data to the source, under an agreement that forbids
    sending it on."""

    transfer_id: str
    agreement_id: str


@dataclass(frozen=True)
class Party:
    id: str
    jurisdiction: str
    status: str


@dataclass(frozen=True)
class Parties:
    """The members and the policy versions a decision uses, read in one short transaction."""

    source: Party
    destination: Party | None
    policies: dict[str, tuple[FSLARecord, int]]


@dataclass(frozen=True, eq=False)
class Measured:
    """The table as measured (its engine knows who its rows are) and its report."""

    engine: Engine
    report: AnalysisReport


@dataclass(frozen=True, eq=False)
class Case:
    """Everything one transfer's decision reads, as the service found it: the parties and their
    policy versions, the request, the table as measured with its roles, the earlier releases to
    the same destination the rules look back on (``history``), the agreement the transfer is
    made under (``agreed``) and an earlier delivery of the same data to the source that may not
    be sent on (``onward``)."""

    parties: Parties
    request: TransferRequest
    roles: Roles
    measured: Measured
    history: History | None = None
    agreed: Agreed | None = None
    onward: Onward | None = None


def lookback_days(parties: Parties, request: TransferRequest) -> int | None:
    """How far back the rules of this transfer look for earlier releases to the same
    destination (the longest of the rule sets that apply); None when none does."""
    destination = parties.destination
    if destination is None or destination.jurisdiction not in parties.policies:
        return None
    return lookback([rule_set for _scope, _whose, rule_set in _records_rule_sets(parties, request)])


def _records_rule_sets(parties: Parties, request: TransferRequest):
    """(scope, jurisdiction, rule set) of the parties' F-SLA records for this transfer."""
    source, destination = parties.source, parties.destination
    context = TransferContext(source.jurisdiction, destination.jurisdiction, request.purpose)
    return applicable_rule_sets(
        context,
        parties.policies[source.jurisdiction][0],
        parties.policies[destination.jurisdiction][0],
    )


def decide(case: Case, effort: Effort) -> Outcome:
    """The decision of ``case`` (see :class:`Case`); an agreement's terms are one more rule set,
    and it must be between these parties for this purpose.

    A transfer whose rows may not leave as sent (rejected, or needing anonymization) past the
    gate carries a note when every rule set would allow an aggregate release of the data
    instead (``aggregate_release_possible``, a passed rule).
    """
    outcome = _decide_rows(case, effort)
    parties, request = case.parties, case.request
    if outcome.status == TransferStatus.APPROVED or any(
        not rule.passed and rule.rule in _GATE for rule in outcome.rules
    ):
        return outcome
    rule_sets = _records_rule_sets(parties, request)
    requirements = combine([r for _, _, r in rule_sets], [(scope, j) for scope, j, _ in rule_sets])
    note = aggregate_instead(FEDERATION, parties.source.jurisdiction, requirements)
    if note is None:
        return outcome
    return replace(outcome, rules=[*outcome.rules, note])


# Rules an aggregate release must pass too: when one fails, statistics cannot leave either.
_GATE = frozenset(
    {
        "destination_known",
        "destination_active",
        "destination_not_source",
        "destination_allowed",
        "purpose_allowed",
        "agreement_terms",
        "onward_transfer",
    }
)


def _decide_rows(case: Case, effort: Effort) -> Outcome:
    parties, request, roles, measured = case.parties, case.request, case.roles, case.measured
    history, agreed, onward = case.history, case.agreed, case.onward
    report = measured.report
    source, destination = parties.source, parties.destination
    source_policy, source_version = parties.policies[source.jurisdiction]
    versions = {source.jurisdiction: source_version}
    federation = federation_rules(source, destination, request, agreed, onward)
    if any(not rule.passed for rule in federation):
        return Outcome(TransferStatus.REJECTED, federation, None, versions, report)

    destination_policy, destination_version = parties.policies[destination.jurisdiction]
    versions[destination.jurisdiction] = destination_version
    context = TransferContext(
        source.jurisdiction,
        destination.jurisdiction,
        request.purpose,
        roles.quasi_identifiers,
        roles.sensitive,
        roles.person_key,
        None if agreed is None else (agreed.id, agreed.terms.rule_set(measured.engine.columns)),
    )
    fraction = suda.strictest_fraction(
        rules for _, _, rules in applicable_rule_sets(context, source_policy, destination_policy)
    )
    if fraction is not None:  # SUDA's search only when a rule set bounds DIS-SUDA
        report = suda.with_suda(measured.engine, report, fraction)
    joints = ()
    if history is not None and history.releases:
        joints = assess(
            measured.engine,
            context.quasi_identifiers,
            context.sensitive,
            history.releases,
            history.now,
        )
    decision = evaluate(report, context, source_policy, destination_policy, joints)
    rules = federation + list(decision.rules)
    retention = decision.requirements.max_retention_days
    if decision.status != TransferStatus.ANONYMIZATION_REQUIRED:
        return Outcome(decision.status, rules, None, versions, report, retention_days=retention)

    records = [source_policy, destination_policy] if context.cross_border else [source_policy]
    engine = measured.engine
    hierarchies = followed(request.hierarchies, records, engine.columns, engine.dictionary)
    if hierarchies.problem is not None:
        found = VerifiedRemedy(
            False, f"the broker cannot anonymize this data: {hierarchies.problem}"
        )
    else:
        found = find_remedy(
            engine,
            report,
            decision,
            context,
            source_policy,
            destination_policy,
            effort,
            history,
            hierarchies.tables,
        )
    if found.verified:
        floor = utility_floor(request, context, source_policy, destination_policy)
        refusal = below_floor(found, floor)
        if refusal is not None:
            rules.append(refusal)
            remedy = found.document().model_copy(
                update={"verified": False, "steps": [], "note": refusal.detail}
            )
            return Outcome(TransferStatus.REJECTED, rules, remedy, versions, report)
    if not found.verified:
        rules.append(
            RuleResult(
                "remedy_found",
                FEDERATION,
                source.jurisdiction,
                False,
                found.reason or "no remedy",
                fixable=False,
            )
        )
        return Outcome(TransferStatus.REJECTED, rules, found.document(), versions, report)
    remedy = found.document()
    remedy.note = _join(remedy.note, *hierarchies.notes)
    required = TransferStatus.ANONYMIZATION_REQUIRED
    if request.anonymize != Anonymize.AUTO:
        remedy.note = _join(
            "Send again with anonymize=auto to have the broker apply these steps, or apply "
            "them yourself",
            remedy.note,
        )
        return Outcome(required, rules, remedy, versions, report, preview=found.anonymized)
    if not decision.requirements.auto_anonymize:
        remedy.note = _join(
            f"anonymize=auto was asked but the rules of {' and '.join(sorted(versions))} do not "
            "all allow the broker to anonymize: apply the steps yourself",
            remedy.note,
        )
        return Outcome(required, rules, remedy, versions, report, preview=found.anonymized)
    remedy.applied = True
    remedy.before = StoredBefore(
        report=report.stored(), rules=[StoredRule.of(r.stored()) for r in rules]
    )
    after_rules = federation + list(found.decision.rules)
    return Outcome(
        TransferStatus.APPROVED,
        after_rules,
        remedy,
        versions,
        found.report,
        found.anonymized,
        retention_days=retention,
    )


def utility_floor(
    request: TransferRequest,
    context: TransferContext,
    source: FSLARecord,
    destination: FSLARecord,
) -> tuple[float, str, str] | None:
    """The highest floor on the information a remedy keeps: (percent, scope, jurisdiction),
    from the rule sets that apply or the request; None when nobody sets one."""
    floors = [
        (rules.min_utility_percent, scope, jurisdiction)
        for scope, jurisdiction, rules in applicable_rule_sets(context, source, destination)
        if rules.min_utility_percent is not None
    ]
    if request.min_utility_percent is not None:
        floors.append((request.min_utility_percent, REQUEST, context.source_jurisdiction))
    return max(floors, key=lambda floor: floor[0]) if floors else None


def below_floor(found: VerifiedRemedy, floor: tuple[float, str, str] | None) -> RuleResult | None:
    """The failed ``min_utility_percent`` rule when the verified remedy keeps less information
    than the floor (or keeps an amount the broker did not measure); None when it passes."""
    if floor is None:
        return None
    percent, scope, jurisdiction = floor
    whose = "the request" if scope == REQUEST else f"{jurisdiction} ({scope})"
    loss = found.remedy.information_loss
    if loss is None:
        detail = (
            f"{whose} asks a remedy to keep at least {percent:g} % of the information, and the "
            "information kept by a generalization planned on counts (data read out of core) is "
            "not measured: no remedy is offered or applied"
        )
        return RuleResult(
            "min_utility_percent", scope, jurisdiction, False, detail, None, None, percent, False
        )
    kept = loss.utility_percent
    if kept >= percent:
        return None
    detail = (
        f"the only verified remedy keeps {kept:.1f} % of the information (non-uniform entropy "
        f"of the measured attributes), below the {percent:g} % that {whose} asks "
        "(min_utility_percent): it is not offered, and not applied"
    )
    return RuleResult(
        "min_utility_percent",
        scope,
        jurisdiction,
        False,
        detail,
        None,
        round(kept, 4),
        percent,
        False,
    )


def _join(*parts: str | None) -> str:
    return "; ".join(p for p in parts if p)


def federation_rules(
    source: Party,
    destination: Party | None,
    request: TransferRequest,
    agreed: Agreed | None = None,
    onward: Onward | None = None,
) -> list[RuleResult]:
    rules = _member_rules(source, destination, request)
    if agreed is not None:
        rules.append(_agreement_rule(source, request, agreed))
    if onward is not None:
        rules.append(
            RuleResult(
                "onward_transfer",
                FEDERATION,
                source.jurisdiction,
                False,
                f"this data reached {source.id!r} in transfer {onward.transfer_id} under "
                f"agreement {onward.agreement_id}, which does not allow sending it on",
                measured=onward.transfer_id,
                fixable=False,
            )
        )
    return rules


def _agreement_rule(source: Party, request: TransferRequest, agreed: Agreed) -> RuleResult:
    """Whether the transfer is the one the agreement is about: from its provider, to its
    consumer, for its purpose."""
    problems = []
    if agreed.provider != source.id:
        problems.append(f"its provider is {agreed.provider!r}, not {source.id!r}")
    if agreed.consumer != request.destination:
        problems.append(f"its consumer is {agreed.consumer!r}, not {request.destination!r}")
    if agreed.terms.purpose.casefold() != request.purpose.strip().casefold():
        problems.append(f"its purpose is {agreed.terms.purpose!r}, not {request.purpose!r}")
    return RuleResult(
        "agreement_terms",
        FEDERATION,
        source.jurisdiction,
        not problems,
        f"agreement {agreed.id}: "
        + ("; ".join(problems) if problems else "this transfer is the one it is about"),
        measured=agreed.id,
        fixable=False,
    )


def _member_rules(
    source: Party, destination: Party | None, request: TransferRequest
) -> list[RuleResult]:
    known = destination is not None
    rules = [
        RuleResult(
            "destination_known",
            FEDERATION,
            source.jurisdiction,
            known,
            f"member cloud {request.destination!r} is "
            + ("registered" if known else "not registered in the federation"),
            measured=request.destination,
            fixable=False,
        )
    ]
    if known:
        active = destination.status == MemberStatus.ACTIVE
        rules.append(
            RuleResult(
                "destination_active",
                FEDERATION,
                destination.jurisdiction,
                active,
                f"member cloud {destination.id!r} is {destination.status}",
                measured=destination.status,
                threshold=MemberStatus.ACTIVE,
                fixable=False,
            )
        )
        distinct = destination.id != source.id
        rules.append(
            RuleResult(
                "destination_not_source",
                FEDERATION,
                source.jurisdiction,
                distinct,
                "the destination is another member"
                if distinct
                else "a member cannot send a transfer to itself",
                fixable=False,
            )
        )
    return rules
