"""``make demo --once``: the broker and three member clouds as real processes, and the scenario."""

import subprocess
import sys

from tests.conftest import REPO


def test_demo_shows_the_three_decisions_and_a_delivery(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "member_cloud.federation",
            "--once",
            "--data",
            str(tmp_path / "demo"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.count("decision: APPROVED") == 2
    assert "decision: ANONYMIZATION_REQUIRED" in out
    assert "decision: REJECTED" in out
    assert "delivery: delivered in fr-research's inbox (patients_published.csv, as sent)" in out
    assert "(patients_original.anonymized.csv, anonymized)" in out
    assert "FAILED export SN purpose_allowed" in out
    assert "/docs" in out
