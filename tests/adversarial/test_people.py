"""Rows are not people: one person sent several times, and values precise enough to find them.

The attack. A hospital sends each patient three times, each time with another diagnosis, and no
person key: every (birth date, postcode, sex) class holds exactly 3 rows, so counted in rows
k = 3 and l = 3, and each class is one person. A recipient who knows someone's birth date,
postcode and sex (a neighbour, an employer, a voter roll) finds their class and reads all three
diagnoses. Variants: the copies differ in a column that is neither a quasi-identifier nor
sensitive (so the rows are not identical), they are spread over two transfers, the upload is
counted out of core, and the values are written so that equal values look different (a date
three ways, postcodes with blanks, ages as text).

The judge (:mod:`tests.adversarial.judge`, no broker code) knows who each row sent is and counts,
for every delivered class, the people whose values its labels cover (f); and it reads the
delivered dates, postcodes and ages for identifying precision as HIPAA's Safe Harbor draws it
(g), which the seed records of SN and FR adopt.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.adversarial import judge
from tests.adversarial.conftest import settle, settle_response
from tests.adversarial.tables import DIAGNOSES, birth_dates, csv_bytes, rng

AUTO = ["none", "auto"]
QUASI = ["birth_date", "zip", "sex"]
SENT = [*QUASI, "diagnosis"]


def repeated_people(people: int = 60, times: int = 3, seed: int = 80) -> pd.DataFrame:
    """``people`` people, each with a (birth date, postcode, sex) of their own, each sent
    ``times`` times with ``times`` different diagnoses; ``person`` says who (never sent)."""
    r = rng(seed)
    dates = birth_dates(people, seed=seed)
    zips = [f"{z}" for z in r.choice(range(10000, 10400, 10), people)]
    sexes = r.choice(["F", "M"], people)
    rows = []
    for i in range(people):
        for j in range(times):
            diagnosis = DIAGNOSES[(i + j) % len(DIAGNOSES)]
            rows.append((f"P{i:03d}", dates[i], zips[i], sexes[i], diagnosis))
    return pd.DataFrame(rows, columns=["person", *SENT])


def judged(broker, answer: dict, frame: pd.DataFrame, **precision) -> pd.DataFrame | None:
    """The delivery (if any) through the suite's rule and the people/precision judge."""
    delivered = settle(broker, answer, known=QUASI)
    if delivered is None:
        return None
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    problems = judge.people_behind(table, frame, QUASI, "person")
    problems += judge.precision(
        table, dates=["birth_date"], postcodes=["zip"], ages=precision.get("ages", [])
    )
    assert problems == [], (
        f"transfer {answer['id']} ({answer['status']}) delivered what the judge refuses:\n- "
        + "\n- ".join(problems)
    )
    return table


# --- the attack --------------------------------------------------------------------------------


@pytest.mark.parametrize("anonymize", AUTO)
def test_one_person_sent_three_times_with_three_diagnoses(broker, anonymize):
    """Classes of exactly 3 rows, each one person: never delivered as they are; with
    ``anonymize=auto`` the broker generalizes until every class holds 3 people."""
    frame = repeated_people()
    answer = broker.send(
        csv_bytes(frame[SENT]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    assert answer["status"] == ("approved" if anonymize == "auto" else "anonymization_required")
    judged(broker, answer, frame)


@pytest.mark.parametrize("anonymize", AUTO)
def test_the_copies_differ_in_a_column_nobody_declared(broker, anonymize):
    """Each copy carries a visit number of its own, so no two rows are identical; the remedy
    drops that identifier, and the rows it leaves behind are one person's again."""
    frame = repeated_people(seed=81)
    frame["visit"] = [f"V{i:05d}" for i in range(len(frame))]
    answer = broker.send(
        csv_bytes(frame[[*SENT, "visit"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    judged(broker, answer, frame)


def test_the_copies_differ_in_a_second_sensitive_column(broker):
    """Each copy holds another ward (declared sensitive too): rows differ in two sensitive
    values, still one person's."""
    frame = repeated_people(seed=82)
    frame["ward"] = [f"W{i % 3}" for i in range(len(frame))]
    answer = broker.send(
        csv_bytes(frame[[*SENT, "ward"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis,ward",
        anonymize="auto",
    )
    judged(broker, answer, frame)


def test_the_copies_are_spread_over_two_transfers(broker):
    """Three diagnoses in one transfer, three more in another: each judged alone, and the two
    deliveries read together must still hide every person among 3."""
    frame = repeated_people(times=6, seed=83)
    halves = [frame.groupby("person").head(3), frame.groupby("person").tail(3)]
    delivered = []
    for half in halves:
        answer = broker.send(
            csv_bytes(half[SENT]),
            quasi_identifiers=",".join(QUASI),
            sensitive="diagnosis",
            anonymize="auto",
        )
        table = judged(broker, answer, frame)
        if table is not None:
            delivered.append(table)
    if len(delivered) == 2:
        both = pd.concat(delivered, ignore_index=True)
        assert judge.people_behind(both, frame, QUASI, "person") == []


@pytest.mark.parametrize("anonymize", AUTO)
def test_out_of_core(out_of_core_broker, anonymize):
    """The same upload counted out of core by DuckDB (BROKER_IN_MEMORY_MAX_BYTES = 0)."""
    frame = repeated_people(seed=84)
    answer = out_of_core_broker.send(
        csv_bytes(frame[SENT]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    assert answer["status"] != "approved" or anonymize == "auto", answer["rules"]
    judged(out_of_core_broker, answer, frame)


# --- equal values written differently ----------------------------------------------------------


def _written_three_ways(frame: pd.DataFrame, column: str, ways) -> pd.DataFrame:
    """Each person's three rows write ``column`` each its own way (``ways``: functions)."""
    frame = frame.copy()
    copy = frame.groupby("person").cumcount()
    frame[column] = [ways[c % len(ways)](v) for v, c in zip(frame[column], copy, strict=True)]
    return frame


@pytest.mark.parametrize("anonymize", AUTO)
def test_a_birth_date_written_three_ways(broker, anonymize):
    """ISO, day first with slashes, and with a time of day: three spellings, one date."""
    frame = _written_three_ways(
        repeated_people(seed=85),
        "birth_date",
        [
            lambda d: d,
            lambda d: f"{d[8:10]}/{d[5:7]}/{d[:4]}",
            lambda d: f"{d} 00:00:00",
        ],
    )
    answer = broker.send(
        csv_bytes(frame[SENT]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    judged(broker, answer, frame)


@pytest.mark.parametrize("anonymize", AUTO)
def test_postcodes_written_with_blanks(broker, anonymize):
    """``10230``, ``10 230`` and `` 10230 `` (no-break spaces): one postcode."""
    frame = _written_three_ways(
        repeated_people(seed=86),
        "zip",
        [lambda z: z, lambda z: f"{z[:2]} {z[2:]}", lambda z: f"\u00a0{z}\u00a0"],
    )
    answer = broker.send(
        csv_bytes(frame[SENT]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    judged(broker, answer, frame)


@pytest.mark.parametrize("anonymize", AUTO)
def test_ages_as_text_and_over_the_cap(broker, anonymize):
    """Ages written ``"93"``, ``"93 ans"`` and ``"０９３"`` (full-width), some over 89, with
    the year of birth instead of the date: the ages are the precise values here."""
    frame = repeated_people(seed=87)
    r = rng(88)
    ages = {
        p: int(a) for p, a in zip(frame["person"].unique(), r.integers(60, 100, 60), strict=True)
    }
    frame["age"] = frame["person"].map(ages).astype(str)
    frame = _written_three_ways(
        frame,
        "age",
        [lambda a: a, lambda a: f"{a} ans", lambda a: a.zfill(3).translate(_FULL_WIDTH)],
    )
    frame["birth_date"] = frame["birth_date"].str[:4]
    columns = ["age", "zip", "sex", "diagnosis"]
    answer = broker.send(
        csv_bytes(frame[columns]),
        quasi_identifiers="age,zip,sex",
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    delivered = settle(broker, answer, known=["age", "zip", "sex"])
    if delivered is None:
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    problems = judge.people_behind(table, frame, ["age", "zip", "sex"], "person")
    problems += judge.precision(table, postcodes=["zip"], ages=["age"])
    assert problems == [], problems


_FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


# --- names that dodge the precision rules ------------------------------------------------------


def _coarse_but_precise(seed: int) -> pd.DataFrame:
    """240 people once each: a sex and an age band make classes of many people, while the
    birth date, the postcode and the age are as precise as they come."""
    r = rng(seed)
    frame = pd.DataFrame(
        {
            "born": r.choice(birth_dates(80, seed=seed), 240),  # not all distinct
            "postcode": [f"{z}" for z in r.choice(range(10000, 10400, 10), 240)],
            "years": [str(a) for a in r.integers(60, 100, 240)],
            "sex": r.choice(["F", "M"], 240),
            "diagnosis": r.choice(DIAGNOSES, 240),
        }
    )
    frame.insert(0, "person", [f"P{i:03d}" for i in range(240)])
    return frame


@pytest.mark.parametrize(
    ("date", "postcode", "age"),
    [
        ("c7", "ZIP\u200b", "\u00c2ge"),  # by content only; an invisible character; an accent
        ("DateNaissance", "\uff5a\uff49\uff50", "\u0410GE"),  # full-width zip, a Cyrillic A
        ("birthDate", "Code Postal", "age (ans)"),
        ("c7", "zip5", "age1"),  # digits glued to the word
        ("c7", "cp", "edad"),
        ("c7", "PLZ", "years"),
    ],
)
def test_dates_postcodes_and_ages_under_names_that_dodge(broker, date, postcode, age):
    """Whatever the spelling of its name, a column of full dates, postcodes or exact ages over
    89 never leaves finer than the seed records allow (year, 2 characters, 90+)."""
    frame = _coarse_but_precise(90).rename(columns={"born": date, "postcode": postcode})
    frame = frame.rename(columns={"years": age})
    sent = [date, postcode, age, "sex", "diagnosis"]
    response = broker.post(
        csv_bytes(frame[sent]), quasi_identifiers="sex", sensitive="diagnosis", anonymize="auto"
    )
    delivered = settle_response(broker, response)
    if delivered is None:
        return
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    assert {date, postcode, age} <= set(table.columns), "generalized, not dropped"
    problems = judge.precision(
        table, dates=[date], postcodes=[postcode], ages=[age], postcode_characters=2
    )
    assert problems == [], problems


# --- a person key that lies --------------------------------------------------------------------


def _lying_keys(frame: pd.DataFrame, how: str) -> pd.Series:
    """A person key for each row that splits each person: a fresh key on every copy, or the
    person's own key written in look-alike ways (case, a blank, a letter O for a zero)."""
    copy = frame.groupby("person").cumcount()
    if how == "fresh":
        return pd.Series([f"K{i:05d}" for i in range(len(frame))], index=frame.index)
    ways = [lambda p: p, lambda p: p.lower() + " ", lambda p: p.replace("0", "O", 1)]
    return pd.Series(
        [ways[c % 3](p) for p, c in zip(frame["person"], copy, strict=True)], index=frame.index
    )


@pytest.mark.parametrize("how", ["fresh", "look-alike"])
@pytest.mark.parametrize("anonymize", AUTO)
def test_a_person_key_that_splits_each_person(broker, how, anonymize):
    """Each person's three rows (one rare tuple) carry three keys: the key may only merge, so
    the rows stay one person and no class of one person is delivered as three."""
    frame = repeated_people(seed=91)
    frame["patient"] = _lying_keys(frame, how)
    answer = broker.send(
        csv_bytes(frame[[*SENT, "patient"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        person_key="patient",
        anonymize=anonymize,
    )
    assert answer["status"] == ("approved" if anonymize == "auto" else "anonymization_required")
    table = judged(broker, answer, frame)
    assert table is None or "patient" not in table.columns


@pytest.mark.parametrize("anonymize", AUTO)
def test_look_alike_keys_across_changed_values(broker, anonymize):
    """One person's rows differ in the sex written and carry look-alike keys: the key joins
    them (``P001``, ``p001 ``, ``P0O1``), so a class of them is one person."""
    frame = repeated_people(seed=92)
    frame["sex"] = [
        s if c == 0 else {"F": "M", "M": "F"}[s]
        for s, c in zip(frame["sex"], frame.groupby("person").cumcount(), strict=True)
    ]
    frame["patient"] = _lying_keys(frame, "look-alike")
    answer = broker.send(
        csv_bytes(frame[[*SENT, "patient"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        person_key="patient",
        anonymize=anonymize,
    )
    judged(broker, answer, frame)


@pytest.mark.parametrize("how", ["fresh", "look-alike"])
def test_a_person_key_that_splits_each_person_out_of_core(out_of_core_broker, how):
    """The same lying keys, counted out of core by DuckDB."""
    frame = repeated_people(seed=93)
    frame["patient"] = _lying_keys(frame, how)
    answer = out_of_core_broker.send(
        csv_bytes(frame[[*SENT, "patient"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        person_key="patient",
        anonymize="auto",
    )
    judged(out_of_core_broker, answer, frame)


_MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_MOIS = ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre"]
_MOIS += ["octobre", "novembre", "décembre"]
_WRITINGS = {
    "compact": lambda d: d.replace("-", ""),  # 19500301
    "month-name": lambda d: f"{d[8:10]}-{_MONTH_NAMES[int(d[5:7]) - 1]}-{d[:4]}",
    "mois": lambda d: f"{int(d[8:10])} {_MOIS[int(d[5:7]) - 1]} {d[:4]}",
    "two-digit-year": lambda d: f"{d[8:10]}/{d[5:7]}/{d[2:4]}",
}


@pytest.mark.parametrize(
    ("writing", "date", "address", "age"),
    [
        ("compact", "c7", "adresse", "age1"),
        ("month-name", "dob", "where", "edad"),
        ("mois", "c8", "domicile", "years"),
        ("two-digit-year", "when", "c9", "\u00e2ge"),
    ],
)
def test_dates_in_other_writings_postcodes_in_addresses_ages_under_other_names(
    broker, writing, date, address, age
):
    """A birth date written ``19500301``, ``01-Mar-1950``, ``1 mars 1950`` or ``01/03/50``,
    the postcode inside a free-text address, an exact age under ``age1``, ``edad``, ``years``
    or ``âge``: none leaves finer than the seed records allow (year, 2 characters, 90+)."""
    frame = _coarse_but_precise(94)
    frame["born"] = frame["born"].map(_WRITINGS[writing])
    streets = ["rue Carnot", "avenue Cheikh Anta Diop", "boulevard du Centenaire"]
    if address == "adresse":  # a street address (an identifier: dropped or generalized)
        places = [f"{i % 40 + 1} {streets[i % 3]}, " for i in range(len(frame))]
    else:  # a postcode and a town: a place, generalized
        places = ["" for _ in range(len(frame))]
    frame["postcode"] = [f"{p}{z} Dakar" for p, z in zip(places, frame["postcode"], strict=True)]
    frame = frame.rename(columns={"born": date, "postcode": address, "years": age})
    sent = [date, address, age, "sex", "diagnosis"]
    response = broker.post(
        csv_bytes(frame[sent]), quasi_identifiers="sex", sensitive="diagnosis", anonymize="auto"
    )
    delivered = settle_response(broker, response)
    assert delivered is not None, "generalized and delivered, not refused"
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    kept = {date, age} | ({address} if address != "adresse" else set())
    assert kept <= set(table.columns), "generalized, not dropped (a street address may be)"
    problems = judge.precision(
        table, dates=[date], postcodes=[address], ages=[age], postcode_characters=2
    )
    assert problems == [], problems


# --- one person's values nudged apart ----------------------------------------------------------


def _nudged(frame: pd.DataFrame, dates: bool, postcodes: bool) -> pd.DataFrame:
    """Each person's copies written with the birth date a day apart and the postcode's last
    digit changed: no two copies share a tuple, so no tuple repeats."""
    frame = frame.copy()
    copy = frame.groupby("person").cumcount()
    if dates:
        days = pd.to_datetime(frame["birth_date"]) + pd.to_timedelta(copy, unit="D")
        frame["birth_date"] = days.dt.strftime("%Y-%m-%d")
    if postcodes:
        frame["zip"] = [
            z[:-1] + str((int(z[-1]) + c) % 10) for z, c in zip(frame["zip"], copy, strict=True)
        ]
    return frame


@pytest.mark.parametrize(("dates", "postcodes"), [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("anonymize", AUTO)
def test_one_person_sent_three_times_with_values_nudged(broker, dates, postcodes, anonymize):
    """A birth date a day apart, a postcode a digit apart: the copies' tuples differ, yet once
    the dates leave as years and the postcodes as prefixes they are one class of one person."""
    frame = _nudged(repeated_people(seed=95), dates, postcodes)
    answer = broker.send(
        csv_bytes(frame[SENT]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        anonymize=anonymize,
    )
    judged(broker, answer, frame)


# --- birth years that tell an age over the cap -------------------------------------------------


@pytest.mark.parametrize(
    ("column", "writing"),
    [
        ("dob", lambda d: d),  # a full birth date: its year leaves, and may tell 90+
        ("birth_year", lambda d: d[:4]),  # the year alone
        ("annee_naissance", lambda d: d[:4]),
    ],
)
def test_birth_years_that_tell_an_age_over_89(broker, column, writing):
    """Safe Harbor removes "all elements of dates (including year) indicative of such age"
    (over 89): a birth year 90 years ago or more leaves only as one category of the oldest."""
    r = rng(96)
    born = [
        str((pd.Timestamp("1915-01-01") + pd.Timedelta(days=int(d))).date())
        for d in r.integers(0, 70 * 365, 240)
    ]
    frame = _coarse_but_precise(96).assign(born=born)
    frame["born"] = frame["born"].map(writing)
    frame = frame.rename(columns={"born": column})
    sent = [column, "sex", "diagnosis"]
    response = broker.post(
        csv_bytes(frame[sent]), quasi_identifiers="sex", sensitive="diagnosis", anonymize="auto"
    )
    delivered = settle_response(broker, response)
    assert delivered is not None, "generalized and delivered, not refused"
    table = judge.parse(delivered[0]["content-type"], delivered[1])
    assert column in table.columns, "generalized, not dropped"
    problems = judge.precision(table, dates=[column], births=[column])
    assert problems == [], problems
    assert table[column].astype(str).str.fullmatch(r"1[89]\d\d/19\d\d").any(), "the oldest, as one"


@pytest.mark.parametrize("out_of_core", [False, True])
def test_nudged_copies_with_a_fresh_key_each(broker, out_of_core_broker, out_of_core):
    """Both at once: each copy nudged apart and given its own key. The key only merges, so the
    nudged copies stay one person, in memory and out of core."""
    target = out_of_core_broker if out_of_core else broker
    frame = _nudged(repeated_people(seed=97), dates=True, postcodes=True)
    frame["patient"] = _lying_keys(frame, "fresh")
    answer = target.send(
        csv_bytes(frame[[*SENT, "patient"]]),
        quasi_identifiers=",".join(QUASI),
        sensitive="diagnosis",
        person_key="patient",
        anonymize="auto",
    )
    judged(target, answer, frame)
