"""The README stands on its own: it names no file outside the repository, and the license it
ships with is the one pyproject declares."""

import re
import tomllib

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_points_at_nothing_outside_the_repository():
    outside = re.findall(r"\.\./|/work/|\bSPEC\.md\b|\bSTYLE\.md\b|\bSPEC section\b", README)
    assert outside == []


def test_the_glossary_comes_before_the_commands_and_cites_its_sources():
    glossary = README.index("## Glossary")
    assert glossary < README.index("## Two commands")
    section = README[glossary : README.index("## Two commands")]
    for term in ("F-SLA", "Mmaq", "Mmaq index", "QIR risk", "k-anonymity", "l-diversity"):
        assert f"**{term}**" in section, term
    assert "**t-closeness**" in section and "**NUE**" in section
    for source in ("Gaye", "Mansour", "Sweeney", "Machanavajjhala", "Li, T. Li", "Prasser"):
        assert source in section, source


def test_the_license_file_is_the_one_pyproject_declares():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice
