"""The documentation site builds strictly, and its reference pages say what the code says.

``mkdocs build --strict`` fails on a broken link or anchor, a page left out of the nav, and a
docstring the Python API pages cannot render; the reference pages are generated from the code at
each build, so these tests also check that every setting, record field, route and command made it
onto its page. One build (about five seconds) serves every test here.
"""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def checkout_files() -> set:
    return {path for path in REPO.rglob("*") if ".venv" not in path.parts and path.is_file()}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    before = checkout_files()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    return folder, checkout_files() - before


@pytest.fixture(scope="module")
def site(build):
    return build[0]


def page(site, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_every_setting_is_on_the_settings_page(site):
    from broker.config import Settings
    from member_cloud.config import MemberSettings

    text = page(site, "reference/settings")
    for settings in (Settings, MemberSettings):
        prefix = settings.model_config["env_prefix"]
        for name in settings.model_fields:
            assert f"{prefix}{name.upper()}" in text, name


def test_every_setting_says_what_it_is():
    """The settings page is generated from the descriptions: a setting without one would be a
    row that tells an operator nothing."""
    from broker.config import Settings
    from member_cloud.config import MemberSettings

    bare = [
        f"{settings.model_config['env_prefix']}{name.upper()}"
        for settings in (Settings, MemberSettings)
        for name, field in settings.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert bare == []


def test_every_fsla_rule_is_on_the_record_fields_page(site):
    from broker.fsla.models import FSLARecord, RuleSet

    text = page(site, "reference/fsla")
    for name in [*FSLARecord.model_fields, *RuleSet.model_fields]:
        assert f"<code>{name}</code>" in text, name


def test_every_route_and_command_has_its_section(site):
    from broker.cli.app import build_parser

    api = page(site, "reference/http-api")
    assert "POST /v1/transfers" in api and "GET /v1/federation/overview" in api
    assert (site / "openapi.json").exists()
    cli = page(site, "reference/cli")
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name in commands:
        assert f'id="fedbroker-{name}"' in cli, name


def test_the_python_api_shows_the_pure_packages_entry_points_without_sphinx_roles(site):
    expected = {
        "reference/python/metrics": ["broker.metrics.report.analyze", "broker.metrics.mmaq.mmaq"],
        "reference/python/anonymize": ["broker.anonymize.mondrian.mondrian"],
        "reference/python/fsla": ["broker.fsla.evaluate.evaluate", "broker.fsla.decide.decide"],
        "reference/python/privacy": ["broker.privacy.queries.parse_queries"],
        "reference/python/client": [
            "fedbroker.client.clients.Client",
            "fedbroker.client.operations.Operations.create_transfer",
            "fedbroker.client.deliveries.verify_delivery",
        ],
    }
    for path, ids in expected.items():
        text = page(site, path)
        for anchor in ids:
            assert f'id="{anchor}"' in text, anchor
        assert ":func:" not in text and ":mod:" not in text and ":class:" not in text, path


def test_building_the_site_writes_nothing_into_the_checkout(build):
    """The HTTP API page is made from an app, which loads (or makes) signing keys when it is
    created: the hook gives it a throwaway folder."""
    _, new_files = build
    assert {str(path.relative_to(REPO)) for path in new_files} == set()
