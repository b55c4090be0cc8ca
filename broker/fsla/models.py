"""The F-SLA record: one jurisdiction's rules for data leaving it and data coming in.

Pure pydantic models (no web or database code). The same model validates the seed YAML files,
the API's request bodies and the documents stored for each version, so an error always names the
field and the reason in the same way.

Every rule declares which of two of its values is the stricter (``json_schema_extra``'s
``stricter``, read by :mod:`broker.fsla.stricter`): combining rule sets and comparing an
agreement's terms follow the declarations, so a new rule states its direction where it is
defined.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from broker.anonymize.hierarchies import (
    MAX_HIERARCHIES,
    MAX_LEVELS,
    MAX_TEXT_CHARS,
    MAX_VALUES,
    HierarchyError,
    of_table,
    safe_labels,
)
from broker.columns.names import attribute_key
from broker.columns.precision import DATE_LEVELS
from broker.identifiers.short_text import identifier_in_text

JURISDICTION_PATTERN = r"^[A-Z][A-Z0-9]{1,9}$"
ANY_DESTINATION = "*"


class RecursiveDiversityRule(BaseModel):
    """Recursive (c, l)-diversity: in every class, r_1 < c (r_l + ... + r_m) for the value
    counts r_1 >= ... >= r_m of each declared sensitive attribute."""

    model_config = ConfigDict(extra="forbid")

    c: float = Field(json_schema_extra={"stricter": "lower"}, gt=0, examples=[3.0])
    l: int = Field(json_schema_extra={"stricter": "higher"}, ge=2, examples=[2])


class RuleSet(BaseModel):
    """Thresholds one transfer must meet; a field left empty sets no rule."""

    model_config = ConfigDict(extra="forbid")

    identifiers_allowed: bool = Field(
        False,
        json_schema_extra={"stricter": "false"},
        description="May an attribute whose Mmaq class is `identifier` (every value distinct) "
        "pass? Declared sensitive attributes are judged by l and t instead.",
        examples=[False],
    )
    min_log10_mmaq: float | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        le=0,
        description="Lowest log10 Mmaq allowed for any single non-sensitive attribute "
        "(0 = anonymous; a 200-row identifier scores -460.2).",
        examples=[-20.0],
    )
    max_mmaq_index: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=1,
        description="Highest Mmaq index (0 anonymous, 1 identifier) allowed for any single "
        "non-sensitive attribute; scale-free, close to the average prosecutor risk 1/k.",
        examples=[0.5],
    )
    qi_max_mmaq_index: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=1,
        description="Highest Mmaq index allowed for the combination of the quasi-identifiers.",
        examples=[0.34],
    )
    min_k: int | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        ge=1,
        description="Smallest equivalence class allowed on the quasi-identifiers (k-anonymity).",
        examples=[3],
    )
    max_journalist_risk: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        le=1,
        description="Highest re-identification risk allowed for any row by someone who knows "
        "the person is in the population (1 / the smallest population class; without a "
        "population table, 1 / k). El Emam's journalist risk, as ARX reports it.",
        examples=[0.1],
    )
    max_marketer_risk: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        le=1,
        description="Highest share of rows an attacker linking the whole table re-identifies "
        "on average (classes / rows without a population table). El Emam's marketer risk.",
        examples=[0.05],
    )
    sampling_fraction: float | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        ge=1e-6,
        le=1,
        description="The share of its population a dataset sent under these rules is taken to "
        "be (a 10% sample: 0.1; at least one in a million). The population rules below assume "
        "it; without it they cannot be set. A larger share is the stricter: each sample unique "
        "is then likelier unique in the population.",
        examples=[0.1],
    )
    max_population_uniqueness: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=1,
        description="Highest share of the population allowed to be unique on the "
        "quasi-identifiers, estimated from the dataset's class sizes and sampling_fraction by "
        "Dankar et al.'s rule (Pitman, Zayatz or SNB, as ARX). k >= 2 makes it 0.",
        examples=[0.01],
    )
    max_expected_reidentifications: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        description="Highest expected number of re-identified rows: the sum of sdcMicro's "
        "individual risks (Benedetti-Franconi) with every row weighing 1 / sampling_fraction.",
        examples=[1.0],
    )
    max_dis_suda: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=1,
        description="Highest DIS-SUDA score allowed for any record on the quasi-identifiers: a "
        "probability in [0, 1], Skinner and Elliot's (2002) estimate that a sample unique is "
        "unique in the population, shared among the records by their SUDA scores (special "
        "uniques: records unique on few attributes score most), as sdcMicro's suda2 computes "
        "it, at this rule set's sampling_fraction (0.01, sdcMicro's default, without one; a "
        "larger fraction gives higher scores). SUDA runs only when a rule set sets this. The "
        "remedy k-anonymizes the quasi-identifiers with k >= 2: no record is then unique on "
        "any of them, and every score is 0.",
        examples=[0.01],
    )
    min_l: int | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        ge=1,
        description="Fewest distinct sensitive values allowed in an equivalence class "
        "(distinct l-diversity), for every declared sensitive attribute.",
        examples=[2],
    )
    max_alpha: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        le=1,
        description="Largest share one value of each declared sensitive attribute may hold in "
        "an equivalence class ((alpha, k)-anonymity, Wong et al. 2006, with min_k as its k).",
        examples=[0.5],
    )
    recursive_c_l: RecursiveDiversityRule | None = Field(
        None,
        json_schema_extra={"stricter": "nested"},
        description="Recursive (c, l)-diversity (Machanavajjhala et al. 2007) of every declared "
        "sensitive attribute: in each class the most frequent value's count stays below c times "
        "the sum of the counts from the l-th most frequent on.",
        examples=[{"c": 3.0, "l": 2}],
    )
    max_beta: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="Largest relative gain (q - p) / p allowed for a value's share q in a "
        "class over its share p in the table, for every declared sensitive attribute (basic "
        "beta-likeness, Cao and Karras 2012).",
        examples=[1.0],
    )
    max_enhanced_beta: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="As max_beta, each gain also at most -ln p (enhanced beta-likeness): a "
        "frequent value cannot become near certain in a class.",
        examples=[1.0],
    )
    max_delta: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="Delta-disclosure privacy (Brickell and Shmatikov 2008) of every declared "
        "sensitive attribute: |ln(q / p)| below this for each value's share q in a class and "
        "p in the table (natural log; ARX's base-2 delta times ln 2).",
        examples=[1.0],
    )
    max_t: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=1,
        description="Largest distance allowed between a class's and the table's distribution "
        "of each declared sensitive attribute (t-closeness).",
        examples=[0.7],
    )
    linkage_lookback_days: int | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        ge=0,
        description="How many days back the broker looks for earlier transfers from the same "
        "source to the same destination: it joins the new release with each of them (the same "
        "people assumed in both, as releases drawn from one registry are) and holds every joint "
        "class to min_k and min_l, naming the earlier transfer when one fails (Wang and Fung "
        "2006, sequential releases). Empty: releases are judged one at a time.",
        examples=[365],
    )
    max_date_precision: Literal["year", "month", "day"] | None = Field(
        None,
        json_schema_extra={"stricter": "lower", "order": list(DATE_LEVELS)},
        description="Finest date that may leave, in any column of dates (recognized by their "
        "values, or by a name such as birth_date and one date): `year` as HIPAA's Safe Harbor "
        "keeps only the year of a date, `month`, or `day` (no limit). Finer dates fail; the "
        "remedy generalizes them.",
        examples=["year"],
    )
    max_postcode_prefix: int | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=10,
        description="Most leading characters of a postcode that may leave, in a column named "
        "for postcodes (zip, postcode, code_postal, ...) that holds them: 3 as HIPAA's Safe "
        "Harbor keeps the first three digits of a ZIP code. Longer postcodes fail; the remedy "
        "keeps their prefix (`10230` -> `102*`).",
        examples=[3],
    )
    max_age: int | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=0,
        le=150,
        description="Highest age that may leave as written, in a column named for ages that "
        "holds them; older ages leave as one top category (`90+` for 89, as HIPAA's Safe "
        "Harbor aggregates all ages over 89). Older ages fail; the remedy top-codes them.",
        examples=[89],
    )
    forbidden_attributes: list[str] = Field(
        default_factory=list,
        json_schema_extra={"stricter": "union"},
        description="Attribute names that may never pass (compared without regard to case, "
        "look-alike letters or invisible characters).",
        examples=[["NIN", "passport_number"]],
    )
    require_person_key: bool = Field(
        False,
        json_schema_extra={"stricter": "true"},
        description="Must the sender declare a person key (a pseudonymous column naming the "
        "person of each row)? k then counts people: one person's rows sent several times, or "
        "repeated visits, cannot pass for several people. The key itself never leaves.",
        examples=[True],
    )
    min_utility_percent: float | None = Field(
        None,
        json_schema_extra={"stricter": "higher"},
        ge=0,
        le=100,
        description="Least information a remedy must keep, in percent of the non-uniform "
        "entropy of the measured attributes (the remedy's `information_loss.utility_percent`, "
        "Prasser et al. 2016). A remedy below it is neither offered nor applied: the transfer "
        "is rejected with that reason. A request may ask a higher floor, never a lower one.",
        examples=[20.0],
    )
    auto_anonymize: bool = Field(
        False,
        json_schema_extra={"stricter": "false"},
        description="May the broker anonymize the data itself when the request asks for "
        "`anonymize=auto`?",
        examples=[True],
    )
    max_retention_days: int | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        ge=1,
        description="How many days the destination may keep data sent under these rules. Each "
        "delivery says until when (the shortest limit of the rule sets and of the agreement "
        "it is made under), and the destination's member cloud deletes it then and tells the "
        "broker. Empty: no limit.",
        examples=[365],
    )
    aggregate_releases_allowed: bool = Field(
        False,
        json_schema_extra={"stricter": "false"},
        description="May statistics of the data (counts, histograms, sums, means, quantiles) "
        "leave under differential privacy, as an aggregate release (`kind=aggregate`), where "
        "the rows themselves may not? Needs max_epsilon_per_release and epsilon_budget.",
        examples=[True],
    )
    max_epsilon_per_release: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="Most epsilon one aggregate release may spend (the sum over its queries). "
        "Smaller is more private: at 0.1 one person changes any answer's probability by at "
        "most 10.5 %.",
        examples=[1.0],
    )
    max_delta_per_release: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower", "empty": "strictest"},
        ge=0,
        lt=1,
        description="Most delta one aggregate release may spend: the chance, beyond epsilon, "
        "that the guarantee fails (keys of a histogram taken from the data need it). Empty: "
        "no delta, so every histogram must declare its keys.",
        examples=[1e-6],
    )
    epsilon_budget: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="Most epsilon the aggregate releases of one dataset (by its content) to one "
        "destination member may spend together within budget_period_days (they compose: the "
        "epsilons add up). A release beyond it is refused, saying what remains.",
        examples=[3.0],
    )
    source_epsilon_budget: float | None = Field(
        None,
        json_schema_extra={"stricter": "lower"},
        gt=0,
        description="Most epsilon the aggregate releases of one source member to one "
        "destination member may spend together within budget_period_days, whatever the "
        "dataset: the bound a source cannot reset by sending a slightly changed copy.",
        examples=[10.0],
    )
    budget_period_days: int | None = Field(
        None,
        json_schema_extra={"stricter": "higher", "empty": "strictest"},
        ge=1,
        description="The window, in days, over which epsilon_budget and source_epsilon_budget "
        "count what was spent (a release leaves the count once older). Empty: for ever.",
        examples=[365],
    )

    @model_validator(mode="after")
    def _aggregate_releases_are_bounded(self) -> RuleSet:
        if self.aggregate_releases_allowed:
            for name in ("max_epsilon_per_release", "epsilon_budget"):
                if getattr(self, name) is None:
                    raise ValueError(
                        f"aggregate_releases_allowed needs {name}: differential privacy without "
                        "a bound on epsilon protects no one"
                    )
        return self

    @model_validator(mode="after")
    def _population_rules_state_a_fraction(self) -> RuleSet:
        for name in ("max_population_uniqueness", "max_expected_reidentifications"):
            if getattr(self, name) is not None and self.sampling_fraction is None:
                raise ValueError(
                    f"{name} needs sampling_fraction: the share of the population a dataset is "
                    "taken to be"
                )
        return self

    def forbids(self, name: str) -> bool:
        """Whether ``name`` is a forbidden attribute (compared as
        :func:`broker.columns.names.attribute_key` folds names)."""
        return attribute_key(name) in {attribute_key(a) for a in self.forbidden_attributes}

    @field_validator("forbidden_attributes")
    @classmethod
    def _no_blank_names(cls, names: list[str]) -> list[str]:
        cleaned = [name.strip() for name in names]
        if any(not name for name in cleaned):
            raise ValueError("attribute names cannot be blank")
        return cleaned


class FSLARecord(BaseModel):
    """A jurisdiction's federal service level agreement."""

    model_config = ConfigDict(extra="forbid")

    jurisdiction: str = Field(
        pattern=JURISDICTION_PATTERN,
        description="ISO 3166-1 alpha-2 code (SN, FR) or a bloc (EU, ECOWAS).",
        examples=["SN"],
    )
    name: str = Field(
        min_length=1, max_length=200, description="Display name.", examples=["Senegal"]
    )
    legal_basis: str = Field(
        min_length=1,
        description="The law the rules come from.",
        examples=["Law No. 2008-12 on the Protection of Personal Data"],
    )
    authority: str = Field(
        min_length=1,
        description="The supervising authority.",
        examples=["Commission de Protection des Données Personnelles (CDP)"],
    )
    allowed_destinations: list[str] = Field(
        default_factory=list,
        description="Jurisdictions data may be sent to, besides its own; `*` allows any.",
        examples=[["FR", "NG"]],
    )
    allowed_purposes: list[str] = Field(
        min_length=1,
        description="Purposes for which data may leave or enter (compared without regard to case).",
        examples=[["research", "public_health"]],
    )
    domestic_export: RuleSet = Field(
        default_factory=RuleSet,
        description="Rules for data sent to a member in the same jurisdiction.",
    )
    cross_border_export: RuleSet = Field(
        default_factory=RuleSet,
        description="Rules for data sent to a member in another jurisdiction.",
    )
    import_rules: RuleSet = Field(
        default_factory=RuleSet,
        description="Rules for data arriving from a member in another jurisdiction.",
    )
    hierarchies: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict,
        description="Generalization hierarchies the broker's remedy must follow for these "
        "attributes, in data leaving or entering this jurisdiction: attribute -> each value -> "
        "its labels from level 1 up (an ARX hierarchy file inline, one list per line), every "
        "value with the same number of levels. Labels are checked as they are saved: none may "
        "hold a direct identifier or name a value of a class of several values, and range "
        "labels whose bounds are values of their class leave re-labelled on a 1-2-5 grid. At "
        f"most {MAX_HIERARCHIES} attributes and {MAX_VALUES:,} values in all, {MAX_LEVELS} "
        f"levels, {MAX_TEXT_CHARS} characters a value or label.",
        examples=[{"education": {"Bachelors": ["Undergraduate", "*"], "HS-grad": ["School", "*"]}}],
    )

    @field_validator("allowed_destinations")
    @classmethod
    def _destinations_are_codes(cls, codes: list[str]) -> list[str]:
        import re

        for code in codes:
            if code != ANY_DESTINATION and not re.fullmatch(JURISDICTION_PATTERN, code):
                raise ValueError(f"{code!r} is not a jurisdiction code (e.g. FR, EU) or '*'")
        return codes

    @field_validator("allowed_purposes")
    @classmethod
    def _purposes_not_blank(cls, purposes: list[str]) -> list[str]:
        cleaned = [p.strip() for p in purposes]
        if any(not p for p in cleaned):
            raise ValueError("purposes cannot be blank")
        return cleaned

    @field_validator("hierarchies")
    @classmethod
    def _hierarchies_are_safe(
        cls, hierarchies: dict[str, dict[str, list[str]]]
    ) -> dict[str, dict[str, list[str]]]:
        if len(hierarchies) > MAX_HIERARCHIES:
            raise ValueError(f"at most {MAX_HIERARCHIES} hierarchies, got {len(hierarchies)}")
        total = sum(len(table) for table in hierarchies.values() if isinstance(table, dict))
        if total > MAX_VALUES:
            raise ValueError(f"at most {MAX_VALUES:,} values in all hierarchies, got {total:,}")
        seen: dict[str, str] = {}
        for name, table in hierarchies.items():
            if not name.strip():
                raise ValueError("an attribute name cannot be blank")
            earlier = seen.setdefault(attribute_key(name), name)
            if earlier != name:
                raise ValueError(
                    f"{earlier!r} and {name!r} name one attribute (compared without regard to "
                    "case, look-alike letters or invisible characters)"
                )
            try:
                safe_labels(
                    of_table(table, f"the hierarchy of {name!r}"),
                    f"the hierarchy of {name!r}",
                    identifier_in_text,
                )
            except HierarchyError as error:
                raise ValueError(str(error)) from None
        return hierarchies

    def hierarchy(self, name: str) -> tuple[str, dict[str, list[str]]] | None:
        """The hierarchy this record gives for the attribute ``name`` (compared as
        :func:`broker.columns.names.attribute_key` folds names), with the name it is given
        under; None when it gives none."""
        key = attribute_key(name)
        for given, table in self.hierarchies.items():
            if attribute_key(given) == key:
                return given, table
        return None

    @model_validator(mode="after")
    def _not_sending_to_itself(self) -> FSLARecord:
        if self.jurisdiction in self.allowed_destinations:
            raise ValueError(
                f"allowed_destinations lists the record's own jurisdiction {self.jurisdiction}: "
                "domestic transfers are always allowed and follow domestic_export"
            )
        return self

    def allows_destination(self, jurisdiction: str) -> bool:
        return (
            jurisdiction == self.jurisdiction
            or ANY_DESTINATION in self.allowed_destinations
            or jurisdiction in self.allowed_destinations
        )

    def allows_purpose(self, purpose: str) -> bool:
        return purpose.strip().casefold() in {p.casefold() for p in self.allowed_purposes}
