"""The measurement report as one document: written, served and read back by this model.

Pure (pydantic only). The broker stores a report (:meth:`broker.metrics.report.AnalysisReport.
stored`) as :class:`StoredReport`'s JSON, the API serves it as :class:`Report` (the same fields,
without the version), and policy replay reads it back with ``StoredReport.model_validate``
(:func:`broker.fsla.replay.report_from_dict`). The fields are those of ``fedbroker analyze
--format json``.

Reports stored by older brokers lack the fields added since (the version 0 rows, which carry no
``schema_version``): :meth:`Report._older_rows` gives them their defaults, in one place:

- report: ``duplicate_rows`` 0, ``people_counted_by`` identical_rows, ``rare_tuples`` and
  ``rare_tuple_rows`` 0, ``combinations`` [], ``combination_search`` None, ``sensitive`` [];
- attribute: ``values`` text, ``direct_identifier``, ``identifier_evidence`` and ``precision``
  None, ``singled_out_rows`` 0;
- quasi-identifiers: ``k_people`` = k, ``prosecutor_risk.average_per_class`` 0.0,
  ``journalist_risk`` = the prosecutor risk and ``marketer_risk`` = classes / rows (what they are
  without a population table, which no such report had), ``risk_population`` sample;
- sensitive attribute: ``k`` 0, ``known_attributes`` [], ``alpha`` 1.0, ``recursive_c`` None,
  ``recursive_c_bounds`` {}, ``beta_likeness`` 0.0, ``enhanced_beta_likeness`` None,
  ``delta_disclosure`` 0.0 (what the replay always assumed).

Reports of versions 0 and 1 name an attribute's ``qir_class`` with the paper's labels
(``sensitive``, ``quasi_identifier``, ``non_sensitive``): they are read as the levels ``high``,
``medium`` and ``low`` (:mod:`broker.metrics.risk` says why).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from broker.metrics.risk import PAPER_LABELS

# The shape written now; rows without the field are version 0 (see the module docstring).
REPORT_VERSION = 2


class MmaqFields(BaseModel):
    rows: int
    categories: int
    shannon: float = Field(description="Shannon index H in nats")
    shannon_normalized: float = Field(description="H / ln N, in [0, 1]")
    log10_stabilizer: float = Field(description="log10 of the product of relative frequencies")
    log10_mmaq: float
    mmaq: str = Field(
        description="Mmaq in scientific notation (it underflows float64)", examples=["6.223e-461"]
    )
    mmaq_index: float = Field(description="log10 Mmaq / (-N log10 N): 0 anonymous, 1 identifier")
    class_: str = Field(alias="class", description="identifier, quasi_identifier or anonymous")

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


class ColumnPrecision(BaseModel):
    kind: str = Field(description="date, postcode or age")
    finest: str | int | None = Field(
        description="The most precise value: a date's level (year, month, day), a postcode's "
        "characters, the highest age told apart; None when no value tells any"
    )
    unreadable: int = Field(description="Values that hold a digit and read as none of the kind")
    oldest_birth_year: int | None = Field(
        None,
        description="Of a column of birth dates: the earliest year a value may be (the latest "
        "year of its range), the values already in the top category left out; absent otherwise",
        exclude_if=lambda value: value is None,
    )


class AttributeMeasure(MmaqFields):
    name: str
    qir_risk_percent: float = Field(description="100 * distinct values / rows")
    qir_class: Literal["high", "medium", "low"] = Field(
        description="The QIR risk level: high above alpha, medium between beta and alpha, low "
        "below beta (Mansour et al. 2021 label them sensitive, quasi_identifier and "
        "non_sensitive; a level is not a declared role)"
    )
    values: str = Field(
        description="What the values are, from a sample: number, date, code (no blanks, a digit) "
        "or text"
    )
    direct_identifier: str | None = Field(
        description="email, phone, iban, payment_card, passport, national_id, person_name, "
        "device (IMEI, MAC, IP address), vehicle (VIN, number plate) or location (GPS "
        "coordinates) when the values hold such identifiers (the column is then an identifier "
        "whatever its counts or declared role)"
    )
    identifier_evidence: str | None = Field(
        None,
        description="What the identifier detector found, how it was disguised (base64, "
        "look-alike letters, ...) and, when it was split over two adjacent columns, which",
    )
    singled_out_rows: int = Field(description="Rows whose value no other row holds")
    precision: ColumnPrecision | None = Field(
        None, description="For a column of dates, postcodes or ages: how precise its values are"
    )


class CombinationMeasure(MmaqFields):
    attributes: list[str]
    unique_share: float = Field(description="Share of rows unique on these attributes")


class ProsecutorRisk(BaseModel):
    max: float = Field(description="1 / k")
    average: float = Field(description="Mean over rows: classes / N")
    unique_share: float = Field(description="Share of rows alone in their class")
    average_per_class: float = Field(
        description="Mean of 1 / class size over classes (pycanon's average_rir)"
    )


class JournalistRisk(BaseModel):
    max: float = Field(description="1 / the smallest population size of a dataset's class")
    average: float = Field(
        description="max(classes / their population rows, mean over rows of f / F) (ARX)"
    )
    unique_share: float = Field(description="Share of rows whose class is unique in the population")


class QuasiIdentifierMeasure(MmaqFields):
    attributes: list[str]
    k: int
    k_people: int = Field(
        description="k counted in people: distinct person keys, or without a person key, "
        "identical rows as one person"
    )
    equivalence_classes: int
    class_size_histogram: dict[str, int] = Field(description="class size -> number of classes")
    prosecutor_risk: ProsecutorRisk
    journalist_risk: JournalistRisk = Field(
        description="Against a population table; equal to prosecutor_risk without one"
    )
    marketer_risk: float = Field(
        description="Share of rows re-identified on average, mean over rows of f / F "
        "(classes / N without a population table)"
    )
    risk_population: str = Field(
        description="population_table, or sample (the dataset is taken as the whole population)"
    )


class SensitiveMeasure(BaseModel):
    name: str
    l_diversity: int
    entropy_l_diversity: float
    t_closeness: float
    t_closeness_method: str = Field(description="ordered (numbers) or categorical")
    k: int = Field(description="Smallest class of the classes l and t are measured in")
    known_attributes: list[str] = Field(
        description="The attributes those classes are formed on: the quasi-identifiers and, "
        "when several attributes are sensitive, the others (multi-attribute l-diversity)"
    )
    alpha: float = Field(
        description="Largest share of one value within a class: (alpha, k)-anonymity holds for "
        "this alpha and the classes' k (Wong et al. 2006; pycanon's alpha_k_anonymity)"
    )
    recursive_c: int | None = Field(
        description="Smallest integer c for which recursive (c, l)-diversity holds with l = "
        "l_diversity (r_1 the most frequent value, as in the paper and ARX); null when l is 1"
    )
    recursive_c_bounds: dict[str, float] = Field(
        description="l -> the bound c must exceed for recursive (c, l)-diversity, for l from 2 "
        "to l_diversity (Machanavajjhala et al. 2007)"
    )
    beta_likeness: float = Field(
        description="Smallest beta of basic beta-likeness: the largest relative gain "
        "(q - p) / p of a value's share in a class q over its share in the table p "
        "(Cao and Karras 2012)"
    )
    enhanced_beta_likeness: float | None = Field(
        description="Smallest beta of enhanced beta-likeness (each gain at most "
        "min(beta, -ln p)): beta_likeness when every gain is within -ln p, else null (no beta "
        "holds)"
    )
    delta_disclosure: float = Field(
        description="Largest |ln(q / p)| over the values present in a class: delta-disclosure "
        "privacy holds for every delta above it (Brickell and Shmatikov 2008; natural log, as "
        "pycanon; ARX's base-2 delta is this / ln 2)"
    )


class CombinationSearch(BaseModel):
    requested_size: int
    searched_size: int = Field(description="Largest combination size searched in full")
    complete: bool
    evaluations: int = Field(description="Combinations measured")
    found: int
    reported: int = Field(description="Combinations listed (at most 100)")
    note: str | None = Field(description="Why the search stopped short, or what is not listed")


class UniquenessEstimate(BaseModel):
    uniques: float | None = Field(
        description="Estimated population uniques (null: no valid estimate)"
    )
    share: float | None = Field(description="uniques / population_size")


class PopulationUniqueness(BaseModel):
    pitman: UniquenessEstimate = Field(description="Hoshino 2001 (Pitman's sampling formula)")
    zayatz: UniquenessEstimate = Field(description="Zayatz 1991")
    snb: UniquenessEstimate = Field(description="Chen and McNulty 1998 (slide negative binomial)")
    dankar: UniquenessEstimate = Field(
        description="Dankar et al. 2012's decision rule (as ARX applies it)"
    )
    dankar_model: str = Field(
        description="pitman, zayatz or snb: the model the rule picked (dankar: no sample unique)"
    )


class IndividualRisk(BaseModel):
    max: float = Field(description="Highest row risk")
    average: float = Field(description="Mean row risk (sdcMicro's global risk)")
    expected_reidentifications: float = Field(
        description="Sum of the rows' risks (sdcMicro's risk_ER)"
    )
    weights: str = Field(description="The weight column, or `uniform 1/pi`")


class PopulationMeasure(BaseModel):
    sampling_fraction: float = Field(description="The dataset's share of the population")
    sampling_fraction_from: str = Field(
        description="stated, population_table (rows / its rows) or weights (rows / their sum)"
    )
    population_size: int = Field(description="round(rows / sampling_fraction)")
    uniqueness: PopulationUniqueness = Field(
        description="Estimated population uniques on the quasi-identifiers"
    )
    individual_risk: IndividualRisk = Field(
        description="Benedetti-Franconi individual risk with sampling weights (sdcMicro)"
    )
    k_map: int | None = Field(
        description="Smallest population class of a dataset class (with a population table)"
    )


class SudaRecord(BaseModel):
    row: int = Field(description="The record's row in the data as sent, from 0")
    msus: int = Field(description="Its minimal sample uniques")
    score: float = Field(description="Its SUDA score: the sum over its MSUs of (M - size)!")
    dis_score: float = Field(description="Its DIS-SUDA score")


class SudaMeasure(BaseModel):
    """SUDA of the quasi-identifiers (Elliot et al. 2002; DIS-SUDA, Skinner and Elliot 2002),
    as sdcMicro's ``suda2`` computes them: the same object as ``fedbroker analyze --suda``
    without its list of every record."""

    quasi_identifiers: list[str] = Field(description="The keys searched (M of them)")
    dis_fraction: float = Field(description="The sampling fraction DIS-SUDA assumes")
    max_msu_size: int = Field(description="The largest MSU searched (M: every size)")
    records_with_msus: int = Field(description="Records with at least one MSU")
    max_score: float = Field(description="The highest SUDA score of a record")
    max_dis_score: float = Field(description="The highest DIS-SUDA score of a record, in [0, 1]")
    attribute_contributions: dict[str, float] = Field(
        description="Key -> percent of the total SUDA score its MSUs carry"
    )
    riskiest: list[SudaRecord] = Field(
        description="The records of the highest DIS-SUDA scores, riskiest first (none when "
        "the table was counted out of memory)"
    )
    sample_uniques: int = Field(description="U: records unique on every key")
    pair_records: int = Field(description="P: records whose tuple of every key two records hold")
    dis_weight_sum: float = Field(
        description="A: the sum over scoring records of score ** -(1 + (8 - M) / 20)"
    )


class Report(BaseModel):
    rows: int
    duplicate_rows: int = Field(description="Rows identical to an earlier row")
    people_counted_by: str = Field(
        description="person_key (declared), identical_rows (identical rows count as one person) "
        "or worst_case (so do the rows of each rare quasi-identifier tuple, without a key)"
    )
    rare_tuples: int = Field(
        0, description="Rare quasi-identifier tuples held by several rows, each one person"
    )
    rare_tuple_rows: int = Field(0, description="The rows of those rare tuples")
    attributes: list[AttributeMeasure]
    combinations: list[CombinationMeasure] = Field(
        description="Smallest attribute combinations that identify rows"
    )
    combination_search: CombinationSearch | None = Field(
        description="How far the bounded search went (None when it was not asked for)"
    )
    quasi_identifiers: QuasiIdentifierMeasure | None
    sensitive: list[SensitiveMeasure]
    population: PopulationMeasure | None = Field(
        None,
        description="The dataset as a sample of a population: only when a sampling fraction, "
        "weights or a population table is given",
        exclude_if=lambda value: value is None,
    )
    suda: SudaMeasure | None = Field(
        None,
        description="SUDA of the quasi-identifiers: only when asked for, or when a rule "
        "(max_dis_suda) needs it",
        exclude_if=lambda value: value is None,
    )

    @model_validator(mode="before")
    @classmethod
    def _older_rows(cls, data: Any) -> Any:
        """The defaults of the fields a report stored by an older broker lacks (listed in the
        module docstring)."""
        if not isinstance(data, dict) or data.get("schema_version", 0) >= REPORT_VERSION:
            return data
        if data.get("schema_version", 0) >= 1:
            return {**_paper_labels_renamed(data), "schema_version": REPORT_VERSION}
        data = {
            "duplicate_rows": 0,
            "people_counted_by": "identical_rows",
            "rare_tuples": 0,
            "rare_tuple_rows": 0,
            "combinations": [],
            "combination_search": None,
            "sensitive": [],
            **data,
        }
        attributes = data.get("attributes")
        if isinstance(attributes, list):
            data["precision_measured"] = all(
                isinstance(a, dict) and "precision" in a for a in attributes
            )
            data["attributes"] = [
                _defaults(
                    a,
                    values="text",
                    direct_identifier=None,
                    identifier_evidence=None,
                    singled_out_rows=0,
                    precision=None,
                )
                for a in attributes
            ]
        qi = data.get("quasi_identifiers")
        if isinstance(qi, dict):
            prosecutor = _defaults(qi.get("prosecutor_risk"), average_per_class=0.0)
            journalist = None
            if isinstance(prosecutor, dict):
                journalist = {k: prosecutor.get(k) for k in ("max", "average", "unique_share")}
            rows, classes = qi.get("rows"), qi.get("equivalence_classes")
            numbers = isinstance(rows, int) and rows > 0 and isinstance(classes, int)
            data["quasi_identifiers"] = {
                **_defaults(
                    qi,
                    k_people=qi.get("k"),
                    journalist_risk=journalist,
                    marketer_risk=classes / rows if numbers else None,
                    risk_population="sample",
                ),
                "prosecutor_risk": prosecutor,
            }
        if isinstance(data["sensitive"], list):
            data["sensitive"] = [
                _defaults(
                    measure,
                    k=0,
                    known_attributes=[],
                    alpha=1.0,
                    recursive_c=None,
                    recursive_c_bounds={},
                    beta_likeness=0.0,
                    enhanced_beta_likeness=None,
                    delta_disclosure=0.0,
                )
                for measure in data["sensitive"]
            ]
        data["schema_version"] = REPORT_VERSION
        return _paper_labels_renamed(data)


def _paper_labels_renamed(data: dict) -> dict:
    """``data`` with its attributes' QIR classes given as levels (version 1 and before)."""
    attributes = data.get("attributes")
    if isinstance(attributes, list):
        data = {
            **data,
            "attributes": [
                {**a, "qir_class": PAPER_LABELS.get(a.get("qir_class"), a.get("qir_class"))}
                if isinstance(a, dict)
                else a
                for a in attributes
            ],
        }
    return data


def _defaults(part: Any, **defaults: Any) -> Any:
    """``part`` with ``defaults`` for the keys it lacks (anything but a dict left as it is, for
    the model to refuse)."""
    return {**defaults, **part} if isinstance(part, dict) else part


class StoredReport(Report):
    """A report as the broker stores it (a transfer's ``report``, a remedy's ``before``): the
    served :class:`Report` and the version of its shape."""

    schema_version: int = Field(
        REPORT_VERSION,
        description="The shape's version: rows without it are version 0, read as the current "
        "one once given their defaults",
    )
    precision_measured: bool = Field(
        True,
        description="False for a report stored before columns' precision was measured: its "
        "attributes' null precision says nothing of their dates, postcodes or ages",
    )
