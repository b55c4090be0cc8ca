"""The README and the manual stand on their own: they name no file outside the repository and no
issue number, the README stays a short page with the two commands and working links, the glossary
cites its sources, and the license shipped is the one pyproject declares."""

import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
GLOSSARY = REPO / "docs" / "explanations" / "glossary.md"
PAGES = sorted((REPO / "docs").rglob("*.md"))
WRITTEN = [REPO / "README.md", REPO / "CONTRIBUTING.md", *PAGES]

OUTSIDE = re.compile(r"/work/|\bSPEC\.md\b|\bSTYLE\.md\b|\bSPEC section\b|\bissues? #?\d+\b", re.I)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("path", WRITTEN, ids=_name)
def test_the_text_points_at_nothing_outside_the_repository(path):
    text = path.read_text(encoding="utf-8")
    assert OUTSIDE.findall(text) == []
    # "../" only as a link between pages, and every link lands inside the repository
    assert "../" not in LINK.sub("", text)
    for link in LINK.findall(text):
        if not re.match(r"[a-z]+:", link):
            target = (path.parent / link.split("#")[0]).resolve()
            assert target.is_relative_to(REPO.resolve()), link


@pytest.mark.parametrize("path", [REPO / "README.md", REPO / "CONTRIBUTING.md"], ids=_name)
def test_every_relative_link_of_a_root_page_reaches_a_file_of_the_repository(path):
    """The site's strict build checks the links between pages; the two pages at the root, which
    GitHub shows but MkDocs does not build, are checked here."""
    links = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    local = [link.split("#")[0] for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "no link at all"
    missing = [link for link in local if link and not (REPO / link).exists()]
    assert missing == []


def test_the_readme_is_short_names_the_two_commands_and_links_to_the_glossary():
    assert len(README.splitlines()) <= 200
    assert re.search(r"```sh\nmake demo +#[^\n]*\nmake test +#", README)
    assert "(docs/explanations/glossary.md)" in README
    assert README.index("docs/explanations/glossary.md") < README.index("make demo")
    assert "(CONTRIBUTING.md)" in README


def test_the_glossary_defines_the_terms_and_cites_their_sources():
    text = GLOSSARY.read_text(encoding="utf-8")
    for term in ("F-SLA", "Mmaq", "Mmaq index", "QIR risk", "k-anonymity", "l-diversity"):
        assert f"**{term}**" in text, term
    for term in ("t-closeness", "NUE", "Differential privacy"):
        assert f"**{term}**" in text, term
    for source in ("Gaye", "Mansour", "Sweeney", "Machanavajjhala", "Li, T. Li", "Prasser"):
        assert source in text, source
    for doi in ("10.1007/978-3-031-62488-9_2", "10.1155/2021/7154705"):
        assert doi in text, doi


def test_the_getting_started_page_leads_with_the_two_commands():
    text = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert text.index("make demo") < text.index("## What the demo shows")
    assert "make test" in text and "(explanations/glossary.md)" in text


def test_the_license_file_is_the_one_pyproject_declares():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a notice


def test_the_quick_check_names_test_paths_that_exist():
    """``make check`` (the README's quick check) lists test paths: none may go missing."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    listed = makefile.split("CHECK := ", 1)[1].split("\ncheck:", 1)[0].replace("\\\n", " ")
    paths = listed.split()
    assert len(paths) > 5
    assert all((REPO / path).exists() for path in paths), paths
    assert "make check" in (REPO / "README.md").read_text(encoding="utf-8")
