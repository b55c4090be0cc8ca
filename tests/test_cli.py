"""``fedbroker analyze`` as a user runs it: a real process, real files, exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from broker.cli import main
from tests.conftest import serve_env

FIXTURES = Path(__file__).parent / "fixtures"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_json_report_of_the_papers_table1():
    result = run(
        "analyze",
        str(FIXTURES / "patients_anonymized.csv"),
        "--qi",
        "Age,Gender",
        "--sensitive",
        "Disease",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rows"] == 9
    assert report["quasi_identifiers"]["k"] == 3
    assert report["sensitive"][0]["l_diversity"] == 3
    names = {a["name"]: a for a in report["attributes"]}
    assert names["Name"]["class"] == "anonymous" and names["Name"]["mmaq"] == "1.000e+00"


def test_table_marks_identifiers():
    result = run("analyze", str(FIXTURES / "patients_original.csv"), "--qi", "Age,Gender")
    assert result.returncode == 0
    nin_line = next(line for line in result.stdout.splitlines() if line.strip().startswith("NIN"))
    assert "identifier" in nin_line
    assert "k = 1" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "missing.csv"], "no such file"),
        (
            ["analyze", str(FIXTURES / "patients_original.csv"), "--qi", "Zip"],
            "Quasi-identifier 'Zip' is not a column",
        ),
        (["analyze", str(FIXTURES / "patients_original.csv"), "--alpha", "0.001"], "beta < alpha"),
    ],
)
def test_user_errors_are_one_line_with_status_2(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_malformed_file_is_status_2(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3\n")
    result = run("analyze", str(path))
    assert result.returncode == 2
    assert "ragged rows" in result.stderr and "Traceback" not in result.stderr


def test_large_input_reports_progress_on_stderr(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "large.parquet"
    pd.DataFrame(
        {"age": rng.integers(18, 90, 120_000), "sex": rng.choice(["F", "M"], 120_000)}
    ).to_parquet(path)
    result = run("analyze", str(path), "--qi", "age,sex", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "read 120,000 rows" in result.stderr
    assert json.loads(result.stdout)["rows"] == 120_000


def test_anonymize_writes_k_anonymous_data_and_reports(tmp_path):
    out = tmp_path / "published.csv"
    result = run(
        "anonymize",
        str(FIXTURES / "patients_original.csv"),
        "--qi",
        "Age,Gender",
        "--sensitive",
        "Disease",
        "--k",
        "3",
        "--l",
        "2",
        "--drop",
        "NIN,Name",
        "-o",
        str(out),
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["before"]["quasi_identifiers"]["k"] == 1
    assert report["after"]["quasi_identifiers"]["k"] >= 3
    written = pd.read_csv(out, dtype=str)
    assert list(written.columns) == ["Age", "Gender", "Disease"]
    assert written.groupby(["Age", "Gender"]).size().min() >= 3


def test_anonymize_partition_writes_linked_tables(tmp_path):
    out = tmp_path / "linked"
    result = run(
        "anonymize",
        str(FIXTURES / "patients_original.csv"),
        "--qi",
        "Age,Gender",
        "--sensitive",
        "Disease",
        "--k",
        "3",
        "--method",
        "partition",
        "-o",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "links.json",
        "quasi_identifiers.csv",
        "sensitive_Disease.csv",
    ]
    links = json.loads((out / "links.json").read_text())
    quasi = pd.read_csv(out / "quasi_identifiers.csv", dtype=str)
    assert links[0]["column"] in quasi.columns and "Disease" not in quasi.columns


def test_anonymize_impossible_target_writes_nothing(tmp_path):
    out = tmp_path / "x.csv"
    result = run(
        "anonymize",
        str(FIXTURES / "patients_original.csv"),
        "--qi",
        "Age",
        "--k",
        "20",
        "-o",
        str(out),
    )
    assert result.returncode == 1
    assert "k = 20 needs at least 20 rows" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_anonymize_unknown_column_is_status_2(tmp_path):
    result = run(
        "anonymize",
        str(FIXTURES / "patients_original.csv"),
        "--qi",
        "Zip",
        "--k",
        "2",
        "-o",
        str(tmp_path / "x.csv"),
    )
    assert result.returncode == 2 and "'Zip'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_anonymize_reports_the_qid_dimension(tmp_path):
    result = run(
        "anonymize",
        str(FIXTURES / "census_sample.csv"),
        "--qi",
        "Age,Gender,ZipCode,MaritalStatus",
        "--k",
        "2",
        "-o",
        str(tmp_path / "c.csv"),
        "--qid-dimension",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    dimension = json.loads(result.stdout)["qid_dimension"]
    assert [level["dimension"] for level in dimension["levels"]] == [1, 2, 3, 4]
    risks = [dimension["risk_percent"][q] for q in dimension["order"]]
    assert risks == sorted(risks, reverse=True)  # falling QIR risk
    assert dimension["levels"][-1]["k"] >= 2
    assert 1 <= dimension["recommended"] <= 4


def test_audit_head_is_exported_and_a_cut_end_of_the_chain_is_caught(tmp_path, monkeypatch, capsys):
    from sqlalchemy import text

    from broker.audit import service as audit
    from broker.storage.db import make_engine, make_sessionmaker, upgrade

    url = f"sqlite:///{tmp_path / 'broker.db'}"
    monkeypatch.setenv("BROKER_DATABASE_URL", url)
    engine = make_engine(url)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        for n in range(3):
            audit.record(session, "admin", "policy.updated", f"P{n}", {"n": n})
        session.commit()
    anchor = tmp_path / "head.json"
    assert main(["audit", "head", "-o", str(anchor)]) == 0
    assert json.loads(anchor.read_text())["head_id"] == 3
    with make_sessionmaker(engine)() as session:  # the log goes on: the anchor still holds
        audit.record(session, "admin", "policy.updated", "P3", {"n": 3})
        session.commit()
    capsys.readouterr()
    assert main(["audit", "check", str(anchor)]) == 0
    out = capsys.readouterr().out
    assert "entry 3 still has the anchored hash; the head is now entry 4" in out
    # Someone with the database's owner rights removes the append-only guard and the last two
    # entries: the chain itself still verifies, the anchor does not.
    with engine.begin() as connection:
        connection.execute(text("DROP TRIGGER audit_log_no_delete"))
        connection.execute(text("DELETE FROM audit_log WHERE id >= 3"))
    assert main(["audit", "head"]) == 0
    assert main(["audit", "check", str(anchor)]) == 1
    assert "the chain ends at entry 2, before the anchored entry 3" in capsys.readouterr().err
    engine.dispose()


def test_a_file_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    from broker.storage.db import make_engine, upgrade

    url = f"sqlite:///{tmp_path / 'broker.db'}"
    monkeypatch.setenv("BROKER_DATABASE_URL", url)
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    target = tmp_path / "missing" / "head.json"
    assert main(["audit", "head", "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"fedbroker audit: error: {target}: No such file or directory")


def test_audit_check_refuses_a_file_that_is_not_a_head(tmp_path, capsys):
    (tmp_path / "x.json").write_text("{}")
    assert main(["audit", "check", str(tmp_path / "x.json")]) == 2
    assert "not a head written by" in capsys.readouterr().err


def test_anonymize_with_duckdb_generalizes_on_counts_and_writes_by_streaming(tmp_path):
    rng = np.random.default_rng(5)
    source = tmp_path / "people.csv"
    pd.DataFrame(
        {
            "age": rng.integers(18, 90, 5000).astype(str),
            "zip": rng.choice([f"{z:05d}" for z in range(57000, 57300, 3)], 5000),
            "disease": rng.choice(["flu", "hiv", "cold"], 5000),
        }
    ).to_csv(source, index=False)
    out = tmp_path / "out.parquet"
    result = run(
        *("anonymize", str(source), "--qi", "age,zip", "--sensitive", "disease"),
        *("--k", "20", "--l", "2", "--method", "generalization", "--engine", "duckdb"),
        *("--memory-limit", "200MB", "-o", str(out), "--format", "json"),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["after"]["quasi_identifiers"]["k"] >= 20
    written = pd.read_parquet(out)
    assert len(written) == 5000 and written.groupby(["age", "zip"]).size().min() >= 20
    assert written.groupby(["age", "zip"])["disease"].nunique().min() >= 2


def test_anonymize_mondrian_above_the_row_bound_is_one_line(tmp_path):
    result = run(
        *("anonymize", str(FIXTURES / "patients_original.csv"), "--qi", "Age,Gender"),
        *("--k", "3", "--engine", "duckdb", "--whole-table-rows", "5"),
        *("-o", str(tmp_path / "x.csv")),
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "fedbroker anonymize: cannot reach the target: mondrian needs the whole table in "
        "memory: 9 rows exceed the bound of 5; use generalization, which plans on counts"
    ]
    assert not (tmp_path / "x.csv").exists()


def test_the_workers_listening_socket_turns_nagle_off_for_what_it_accepts():
    """With several workers, uvicorn binds the shared socket itself and leaves TCP_NODELAY off:
    every kept-alive answer then waited ~40 ms for a delayed ACK. Accepted connections must
    inherit it from the socket serve binds."""
    import socket

    import uvicorn

    from broker.cli.serve import listening_socket

    sock = listening_socket(uvicorn.Config("broker.main:worker_app", host="127.0.0.1", port=0))
    try:
        sock.listen()
        with socket.create_connection(sock.getsockname()[:2]) as client:
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert client  # the client side is the client's business
    finally:
        sock.close()


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_journalist_and_marketer_risk_against_a_population_table(tmp_path, engine):
    """Each class of the sample sits in a bigger class of the population: journalist risk is
    1 / the smallest population class, marketer risk the mean of f / F over the rows (El Emam),
    computed here in exact fractions from the two tables."""
    from fractions import Fraction

    sample = pd.read_csv(FIXTURES / "patients_anonymized.csv", dtype=str, keep_default_na=False)
    classes = sample.groupby(["Age", "Gender"]).size()
    parts = [
        pd.concat([sample[(sample.Age == age) & (sample.Gender == sex)]] * (i + 2))
        for i, (age, sex) in enumerate(classes.index)
    ]
    population = pd.concat([*parts, sample.head(1).assign(Age="99")])
    population.to_csv(tmp_path / "population.csv", index=False)
    sizes = population.groupby(["Age", "Gender"]).size()
    expected_journalist = Fraction(1, int(sizes[classes.index].min()))
    expected_marketer = sum(Fraction(int(f), int(sizes[key])) for key, f in classes.items()) / len(
        sample
    )

    result = run(
        "analyze",
        str(FIXTURES / "patients_anonymized.csv"),
        "--qi",
        "Age,Gender",
        "--engine",
        engine,
        "--population",
        str(tmp_path / "population.csv"),
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    qi = json.loads(result.stdout)["quasi_identifiers"]
    assert qi["risk_population"] == "population_table"
    assert qi["journalist_risk"]["max"] == pytest.approx(float(expected_journalist), rel=1e-12)
    assert qi["marketer_risk"] == pytest.approx(float(expected_marketer), rel=1e-12)
    population_section = json.loads(result.stdout)["population"]
    assert population_section["k_map"] == int(sizes[classes.index].min())
    assert population_section["sampling_fraction"] == len(sample) / len(population)
    assert population_section["sampling_fraction_from"] == "population_table"
    table = run(
        "analyze",
        str(FIXTURES / "patients_anonymized.csv"),
        "--qi",
        "Age,Gender",
        "--population",
        str(tmp_path / "population.csv"),
    )
    assert "against the population table" in table.stdout
    assert f"k-map = {int(sizes[classes.index].min())}" in table.stdout

    population.drop(columns=["Gender"]).to_csv(tmp_path / "short.csv", index=False)
    lacking = run(
        "analyze",
        str(FIXTURES / "patients_anonymized.csv"),
        "--qi",
        "Age,Gender",
        "--population",
        str(tmp_path / "short.csv"),
    )
    assert lacking.returncode == 2 and "--population" in lacking.stderr
    assert len(lacking.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_sampling_fraction_and_weights(tmp_path, engine):
    """sdcMicro's test_indivRisk.R table (keys A, B, C and a weight per row): the expected
    re-identifications are the sum of its published individual risks."""
    rows = ["2,3,1,18.0", "3,3,3,45.5", "2,3,1,39.0", "2,3,2,17.0", "3,3,1,92.0", "3,3,1,8.0"]
    rows += ["1,4,1,123.5", "2,3,1,51"]
    (tmp_path / "sdc.csv").write_text("A,B,C,weight\n" + "\n".join(rows) + "\n")
    published = [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883]
    published += [0.03931625, 0.01369863]
    common = [str(tmp_path / "sdc.csv"), "--qi", "A,B,C", "--engine", engine]
    result = run("analyze", *common, "--weights", "weight", "--format", "json")
    assert result.returncode == 0, result.stderr
    section = json.loads(result.stdout)["population"]
    assert section["sampling_fraction"] == pytest.approx(8 / 394)
    assert section["sampling_fraction_from"] == "weights"
    risk = section["individual_risk"]
    assert risk["expected_reidentifications"] == pytest.approx(sum(published), abs=1e-7)
    assert risk["weights"] == "weight" and section["k_map"] is None

    stated = run("analyze", *common, "--sampling-fraction", "0.25", "--format", "json")
    section = json.loads(stated.stdout)["population"]
    assert (section["population_size"], section["sampling_fraction_from"]) == (32, "stated")
    assert section["individual_risk"]["weights"] == "uniform 1/pi"
    table = run("analyze", *common, "--sampling-fraction", "0.25")
    assert "Dankar's rule" in table.stdout and "expected re-identifications" in table.stdout

    plain = run("analyze", *common, "--format", "json")
    assert "population" not in json.loads(plain.stdout)
    no_qi = run("analyze", str(tmp_path / "sdc.csv"), "--sampling-fraction", "0.5")
    assert no_qi.returncode == 2 and "--qi" in no_qi.stderr


def test_serve_names_a_dask_scheduler_that_does_not_answer_in_one_line(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = serve_env(tmp_path, BROKER_DASK_SCHEDULER=f"tcp://127.0.0.1:{port}")
    result = subprocess.run(
        [sys.executable, "-m", "broker.cli", "serve"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2, result.stderr
    assert "BROKER_DASK_SCHEDULER: no Dask scheduler answers" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_anonymize_l_without_sensitive_names_the_field_and_guesses_the_columns(tmp_path):
    result = run(
        "anonymize",
        str(FIXTURES / "patients_original.csv"),
        "--qi",
        "Age,Gender",
        "--k",
        "2",
        "--l",
        "2",
        "-o",
        str(tmp_path / "x.csv"),
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "`sensitive` form field" in line and "`--sensitive`" in line
    assert line.endswith("columns that look sensitive (a guess from their names): Disease")


def test_admins_are_created_listed_and_revoked_on_the_database(tmp_path, monkeypatch, capsys):
    from broker.admins import service as admins
    from broker.storage.db import make_engine, make_sessionmaker, upgrade

    url = f"sqlite:///{tmp_path / 'broker.db'}"
    monkeypatch.setenv("BROKER_DATABASE_URL", url)
    engine = make_engine(url)
    upgrade(engine)
    assert main(["admins", "create", "awa.diop"]) == 0
    token = capsys.readouterr().out.splitlines()[-1]
    with make_sessionmaker(engine)() as session:
        found = admins.authenticate(session, token)
        assert found is not None and found.name == "awa.diop"
        assert found.created_by.startswith("cli:")
    assert main(["admins", "list"]) == 0
    listed = capsys.readouterr().out
    assert "bootstrap\tactive" in listed and "awa.diop\tactive" in listed
    assert main(["admins", "revoke", "bootstrap"]) == 0
    assert main(["admins", "revoke", "awa.diop"]) == 1  # the last active one
    assert "last active administrator" in capsys.readouterr().err
    assert main(["admins", "create", "Awa"]) == 2
    assert main(["admins", "create", "awa.diop"]) == 1  # names are never reused
    with make_sessionmaker(engine)() as session:
        assert not admins.bootstrap_active(session)
        assert admins.authenticate(session, token) is not None
    engine.dispose()


# What a fresh interpreter holds after the command line has answered a request for help.
_LOADED_AFTER = """
import contextlib, io, sys
from broker.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(",".join(sorted(m for m in ("pandas", "numpy", "pyarrow", "sqlalchemy", "fastapi",
      "duckdb", "opendp", "rich") if m in sys.modules)))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["analyze", "--help"],
        ["anonymize", "--help"],
        ["release", "--help"],
        ["serve", "--help"],
        ["audit", "--help"],
    ],
    ids=" ".join,
)
def test_help_and_version_load_no_heavy_library(args):
    """Asking the command line how to use it loads neither the numerical libraries nor the web
    or database stack (they took 1.5-2 s before it answered); the commands load them to run."""
    loaded = subprocess.run(
        [sys.executable, "-c", _LOADED_AFTER, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    assert loaded == ""


def test_a_command_still_loads_what_it_measures_with():
    """The lazy loading above must not leave a command without its libraries."""
    loaded = subprocess.run(
        [sys.executable, "-c", _LOADED_AFTER, "analyze", str(FIXTURES / "patients_original.csv")],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.strip()
    assert "pandas" in loaded.split(",")


def test_the_command_alone_prints_its_help(capsys):
    assert main([]) == 0
    assert "COMMAND" in capsys.readouterr().out


def test_short_options_mean_the_long_ones(tmp_path):
    """``-k 2`` is ``--k 2`` (and ``-s``, ``-m``, ``-f``): the same result, byte for byte."""
    source = str(FIXTURES / "patients_original.csv")
    outputs = []
    for options in (
        ["-k", "2", "-s", "Disease", "-m", "mondrian", "-f", "json"],
        ["--k", "2", "--sensitive", "Disease", "--method", "mondrian", "--format", "json"],
    ):
        out = tmp_path / f"out{len(outputs)}.csv"
        result = run("anonymize", source, "--qi", "Age,Gender", *options, "-o", str(out))
        assert result.returncode == 0, result.stderr
        outputs.append((json.loads(result.stdout)["summary"], out.read_bytes()))
    assert outputs[0] == outputs[1]


def test_a_misspelt_column_is_answered_with_the_near_miss():
    result = run("analyze", str(FIXTURES / "patients_original.csv"), "--qi", "Age,Gendre")
    assert result.returncode == 2
    assert "did you mean 'Gender'?" in result.stderr


def test_a_list_setting_that_is_not_json_names_the_variable_and_the_form(tmp_path):
    environment = os.environ | {"BROKER_INBOX_ALLOWED_HOSTS": "inbox.example.org"}
    result = subprocess.run(
        [sys.executable, "-m", "broker.cli", "db", "upgrade"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(
        "fedbroker db: error: BROKER_INBOX_ALLOWED_HOSTS must be a JSON list, for example"
    )
    assert len(result.stderr.splitlines()) == 1
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", [["admins", "list"], ["audit", "head"]])
def test_commands_on_a_broker_database_create_none_where_there_is_none(tmp_path, command):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    result = subprocess.run(
        [sys.executable, "-m", "broker.cli", *command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 2
    assert "no broker database at data/broker.db" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no folder, no file


def test_auto_counts_a_csv_larger_than_the_threshold_out_of_core(tmp_path, monkeypatch):
    """``--engine auto`` (the default) decides as the broker does for an upload: DuckDB above
    BROKER_IN_MEMORY_MAX_BYTES' default for a CSV file, pandas below it, for JSON and Parquet
    (read whole) and for standard input."""
    import argparse

    import broker.engines
    from broker.cli.common import choose_engine

    source = FIXTURES / "patients_original.csv"
    parquet = tmp_path / "patients.parquet"
    pd.read_csv(source).to_parquet(parquet)
    size = source.stat().st_size
    auto = argparse.Namespace(engine="auto")
    monkeypatch.setattr(broker.engines, "IN_MEMORY_MAX_BYTES", size - 1)
    assert choose_engine(auto, str(source)) == "duckdb"
    assert choose_engine(auto, str(parquet)) == "pandas"
    assert choose_engine(auto, "-") == "pandas"
    assert choose_engine(argparse.Namespace(engine="pandas"), str(source)) == "pandas"
    monkeypatch.setattr(broker.engines, "IN_MEMORY_MAX_BYTES", size)
    assert choose_engine(auto, str(source)) == "pandas"


def test_a_plain_install_counts_out_of_core(tmp_path):
    """DuckDB is part of the runtime: --engine duckdb needs no extra, and gives the in-memory
    engine's figures on the same file."""
    source = str(FIXTURES / "patients_original.csv")
    reports = [
        json.loads(run("analyze", source, "--qi", "Age,Gender", "-f", "json", "--engine", e).stdout)
        for e in ("duckdb", "pandas")
    ]
    assert reports[0]["quasi_identifiers"] == reports[1]["quasi_identifiers"]
    assert reports[0]["attributes"] == reports[1]["attributes"]
