"""Reading dates, postcodes and ages however they are written (broker.columns.precision)."""

import datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.anonymize.generalization import coarsen_dates
from broker.columns.precision import (
    AGE,
    DATE,
    POSTCODE,
    SAFE_HARBOR,
    ColumnPrecision,
    Limits,
    age_label,
    column_kind,
    date_label,
    postcode_label,
    read_age,
    read_date,
    read_postcode,
)


@pytest.mark.parametrize(
    "written",
    [
        "1983-04-12",
        "1983-4-12",
        "12/04/1983",
        "12-04-1983",
        "12.04.1983",
        "1983/04/12",
        "1983-04-12T08:30:00",
        "1983-04-12 08:30",
        "1983-04-12T08:30:00+02:00",
        "12 avril 1983",
        "12 Avr. 1983",
        "12 April 1983",
        "April 12, 1983",
        "１９８３-０４-１２",  # full-width digits
        " 1983-04-12 ",
        datetime.date(1983, 4, 12),
        pd.Timestamp("1983-04-12 10:00"),
    ],
)
def test_one_birth_date_written_every_way_reads_as_one_day(written):
    read = read_date(written)
    assert (read.canonical, read.precision, read.unreadable) == ("1983-04-12", 2, False)


def test_day_first_unless_only_month_first_is_a_date():
    assert read_date("03/04/2024").canonical == "2024-04-03"
    assert read_date("04/25/2024").canonical == "2024-04-25"


@pytest.mark.parametrize(
    ("written", "canonical", "precision"),
    [("1983-04", "1983-04", 1), ("04/1983", "1983-04", 1), ("avril 1983", "1983-04", 1)],
)
def test_months(written, canonical, precision):
    assert (read_date(written).canonical, read_date(written).precision) == (canonical, precision)


def test_bare_years_are_dates_only_in_a_date_column():
    assert read_date("1983").canonical is None
    assert read_date("1983", years=True).precision == 0
    assert read_date("1980-1989", years=True).canonical == "1980/1989"
    assert read_date("1980/1989", years=True).precision == 0


@pytest.mark.parametrize("written", ["1983-13-01", "31/02/1983", "12 brumaire 1983", "8312"])
def test_digits_that_read_as_no_date_are_unreadable(written):
    assert read_date(written).unreadable


@pytest.mark.parametrize("written", ["", None, float("nan"), "*", "NA", "inconnue"])
def test_what_tells_nothing_is_neither_a_date_nor_unreadable(written):
    read = read_date(written)
    assert (read.precision, read.unreadable) == (None, False)


def test_a_set_label_reads_as_its_most_precise_member():
    assert read_date("1983, 1984-02", years=True).precision == 1
    assert read_postcode("750*, 75011").precision == 5
    assert read_age("34, 93").precision == 93


@pytest.mark.parametrize(
    "written", ["75011", "75 011", "75-011", "\u00a075011\u00a0", "７５０１１", " 75011"]
)
def test_one_postcode_written_every_way(written):
    assert read_postcode(written).canonical == "75011"
    assert read_postcode(written).precision == 5


def test_postcode_prefixes_and_letters():
    assert read_postcode("750*").precision == 3
    assert read_postcode("sw1a 1aa").canonical == "SW1A1AA"
    assert read_postcode("75").precision == 2
    # Free text is an address: its postcode is what it tells; with none, it is unreadable
    # (its precision unknown: the remedy masks it).
    assert read_postcode("Paris 11").unreadable
    assert postcode_label("75011 Paris", 3) == "750*"


@pytest.mark.parametrize(
    ("address", "postcode"),
    [
        ("12 rue X, 75011 Paris", "75011"),
        ("Villa 4, Cité Keur Gorgui, 10200 Dakar", "10200"),
        ("Plot 5 Adeola Odeku Street, Victoria Island, Lagos 101241", "101241"),
        ("10 Downing Street, London SW1A 2AA", "SW1A2AA"),
        ("1600 Pennsylvania Ave NW, Washington, DC 20500-0003", "205000003"),
    ],
)
def test_a_postcode_inside_an_address(address, postcode):
    assert read_postcode(address).canonical == postcode
    assert postcode_label(address, 2) == postcode[:2] + "*"


@pytest.mark.parametrize(
    ("name", "values", "kind"),
    [
        ("age1", ["34", "93", "61"], AGE),
        ("edad", ["34", "93", "61"], AGE),
        ("\u00e2ge", ["34", "93", "61"], AGE),
        ("years", ["34", "93", "61"], AGE),
        ("x", ["34 ans", "93 ans", "61"], AGE),  # by content: the unit
        ("stage", ["3", "4", "2"], None),
        ("zip5", ["10230", "10240"], POSTCODE),
        ("cp", ["10230", "10240"], POSTCODE),
        ("code_postal", ["10230", "10240"], POSTCODE),
        ("PLZ", ["10230", "10240"], POSTCODE),
        ("c1", ["SW1A 1AA", "EC1A 1BB", "K1A 0B1"], POSTCODE),  # by content: the writing
        ("where", ["12 rue X, 75011 Paris", "3 av. Y, 75012 Paris"], POSTCODE),
        ("city", ["Paris", "Dakar"], None),
        ("notes", ["lab ref 10234 ok", "invoice 123456 paid", "ref 10235"], None),  # no town
        ("c5", ["Villa 4, Cité Keur Gorgui, 10200 Dakar", "Lagos 101241"], POSTCODE),
        ("c2", ["19500301", "19611224"], DATE),  # by content: yyyymmdd
        ("c3", ["01-Mar-1950", "3 mars 1950", "3 de marzo de 1950"], DATE),
        ("c4", ["01/03/50", "24/12/61"], DATE),
        ("date_of_visit", ["18322", "18400"], DATE),  # spreadsheet day numbers, named dates
        ("count", ["18322", "18400"], None),
    ],
)
def test_columns_recognized_by_name_and_by_content(name, values, kind):
    assert column_kind(name, values) == kind


@pytest.mark.parametrize(
    ("written", "tells"),
    [
        ("93", 93),
        (93, 93),
        (93.0, 93),
        ("93 ans", 93),
        ("93 years", 93),
        ("93 y", 93),
        ("０９３", 93),
        ("89.5", 89),
        ("80-89", 80),
        ("60-100", 60),  # a Mondrian range: it mixes people of 60 with the older ones
        ("90+", 89),
        ("≥90", 89),
        ("100+", 99),
    ],
)
def test_ages_and_what_they_tell(written, tells):
    assert read_age(written).precision == tells


@pytest.mark.parametrize("written", ["151", "-3", "93 kg", True])
def test_what_is_no_age_is_unreadable(written):
    assert read_age(written).unreadable


@pytest.mark.parametrize(
    ("name", "values", "kind"),
    [
        ("x", ["1983-04-12", "n/a", "12/05/1990"], DATE),
        ("birth_year", ["1983", "1990"], DATE),  # a date by name, years by content
        ("DateNaissance", ["12/04/1983"], DATE),
        ("count", ["1983", "1990"], None),  # a bare number is no date
        ("zip", ["75011", "75 012"], POSTCODE),
        ("Code Postal", ["75011"], POSTCODE),
        ("ZIP\u200b", ["75011"], POSTCODE),  # an invisible character in the name
        ("ref", ["75011", "75012"], None),  # a postcode needs its name
        ("Âge", ["34", "93 ans"], AGE),
        ("\u0410ge", ["34"], AGE),  # a Cyrillic A
        ("AGE_AT_ADMISSION", ["34"], AGE),
        ("village", ["34"], None),  # "age" inside a word is no age
        ("age", ["F", "M"], None),  # named so, holding no ages
    ],
)
def test_columns_are_recognized_by_content_and_folded_names(name, values, kind):
    assert column_kind(name, values) == kind


def test_a_tenth_of_full_dates_among_other_values_makes_a_date_column():
    values = ["1983-04-12"] + [f"note {i}" for i in range(9)]
    assert column_kind("remarks", values) == DATE
    assert column_kind("remarks", values[:1] + [f"note {i}" for i in range(10)]) is None


def test_column_precision_and_limits():
    found = ColumnPrecision.of("born", pd.Series(["1983-04-12", "1983", "13/13/1983"]))
    assert found.as_dict() == {
        "kind": "date",
        "finest": "day",
        "unreadable": 1,
        "oldest_birth_year": 1983,  # "born": birth dates
    }
    assert found.exceeds(Limits(date="day"))  # unreadable: its precision is unknown
    assert ColumnPrecision.from_dict(found.as_dict()) == found
    ages = ColumnPrecision.of("age", pd.Series(["34", "90+"]))
    assert not ages.exceeds(SAFE_HARBOR) and ages.exceeds(Limits(age=80))


def test_birth_years_that_tell_an_age_over_the_cap():
    year = datetime.date.today().year
    old, young = str(year - 90), str(year - 89)  # 89 or 90 years old; 88 or 89
    for name in ("birth_year", "yob", "DateNaissance"):
        found = ColumnPrecision.of(name, pd.Series([young, "1990"]))
        assert found.oldest_birth_year == year - 89
        assert not found.exceeds(Limits(date="year", age=89))
        found = ColumnPrecision.of(name, pd.Series([old, "1990"]))
        assert found.exceeds(Limits(date="year", age=89))
        assert not found.exceeds(Limits(date="year"))  # no age cap: the year may leave
    # The top category (every older year) and a visit's year tell no age.
    assert not ColumnPrecision.of("yob", pd.Series([f"1800/{old}"])).exceeds(SAFE_HARBOR)
    assert ColumnPrecision.of("visit_date", pd.Series([old])).oldest_birth_year is None
    assert date_label(f"{old}-05-01", "year") == old  # not a birth column: the year
    frame = pd.DataFrame({"dob": [f"{old}-05-01", "1990-02-03"]})
    assert coarsen_dates(frame, "dob")["dob"].tolist() == [f"1800/{old}", "1990"]


# --- labels: true, and no more precise than allowed (threat: labels that spell out) -----------


dates = st.dates(datetime.date(1900, 1, 1), datetime.date(2030, 12, 31))
writings = st.sampled_from(
    [
        lambda d: d.isoformat(),
        lambda d: d.strftime("%d/%m/%Y"),
        lambda d: d.strftime("%Y-%m-%d 23:59"),
        lambda d: d.strftime("%d.%m.%Y"),
    ]
)


@settings(max_examples=200, deadline=None)
@given(dates, writings, st.sampled_from(["year", "month"]))
def test_a_date_label_is_true_and_no_finer_than_its_level(day, write, level):
    label = date_label(write(day), level)
    read = read_date(label, years=True)
    assert read.precision <= ["year", "month"].index(level)
    assert read.canonical == day.isoformat()[: len(read.canonical)]


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[0-9]{2} ?[0-9]{3}", fullmatch=True), st.integers(0, 5))
def test_a_postcode_label_is_true_and_no_longer_than_allowed(written, keep):
    label = postcode_label(written, keep)
    compact = written.replace(" ", "")
    assert read_postcode(label).precision in (None, *range(keep + 1))
    assert compact.startswith(str(label).rstrip("*"))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 150), st.sampled_from(["{}", "{} ans", "{} years"]), st.integers(0, 120))
def test_an_age_label_is_true_and_says_nothing_above_the_cap(age, written, cap):
    label = age_label(written.format(age), cap)
    assert read_age(label).precision <= cap
    if str(label).endswith("+"):
        assert age >= int(str(label)[:-1])
    else:
        assert int(label) == age
