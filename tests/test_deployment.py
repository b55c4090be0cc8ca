"""docker-compose.yml and the Dockerfile, checked without a Docker engine.

Every command, module and environment variable they name must exist in the code, and the local
demo (demo/federation.py) must use the same commands and variables.
"""

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from broker.cli.app import build_parser as _parser
from broker.config import Settings
from member_cloud.config import MemberSettings
from tests.conftest import REPO, postgres_database

COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
DOCKERFILE = (REPO / "Dockerfile").read_text()
DEMO = (REPO / "demo" / "federation.py").read_text()
SCENARIO = (REPO / "demo" / "scenario.py").read_text()
# Only inside containers: where others reach a member, and migrations run by the migrate service.
CONTAINER_ONLY = {
    "MEMBER_PUBLIC_URL",
    "BROKER_APPLY_MIGRATIONS",
    # Transfers by reference need the compose file's optional Dask cluster (--profile dask);
    # the demo runs none (tests/broker/test_references.py runs them on a LocalCluster).
    "BROKER_DASK_SCHEDULER",
    "BROKER_REFERENCE_ROOTS",
    "BROKER_REFERENCE_OUTPUT",
}


def dockerfile_instructions(name: str) -> list[str]:
    joined = DOCKERFILE.replace("\\\n", " ")
    return [
        line.split(None, 1)[1] for line in joined.splitlines() if line.split(None, 1)[:1] == [name]
    ]


def check_command(command: list[str]) -> None:
    if command[:2] == ["python", "-m"]:
        module = command[2]
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"no module {module}"
        if spec.submodule_search_locations:  # a package must have __main__
            assert importlib.util.find_spec(f"{module}.__main__"), f"{module} has no __main__"
    elif command[0] == "fedbroker":
        _parser().parse_args(command[1:])  # exits (SystemExit) on an unknown command
    elif command[0] == "dask":  # the cluster's own command line, from the dask extra
        dask = Path(sys.executable).parent / "dask"
        run = subprocess.run([dask, *command[1:], "--help"], capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr.decode()
    else:
        pytest.fail(f"unknown command {command}")


@pytest.mark.parametrize("service", sorted(s for s in SERVICES if "command" in SERVICES[s]))
def test_service_commands_exist(service):
    check_command(SERVICES[service]["command"])


def test_dockerfile_command_exists():
    [cmd] = dockerfile_instructions("CMD")
    check_command(yaml.safe_load(cmd))


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_environment_variables_are_settings(service):
    broker_fields = {f"BROKER_{name.upper()}" for name in Settings.model_fields}
    member_fields = {f"MEMBER_{name.upper()}" for name in MemberSettings.model_fields}
    for variable in SERVICES[service].get("environment", {}):
        if variable.startswith("BROKER_"):
            assert variable in broker_fields, variable
        elif variable.startswith("MEMBER_"):
            assert variable in member_fields, variable
        elif variable.startswith("SCENARIO_"):
            assert f'"{variable}"' in SCENARIO, variable
        else:
            assert service == "postgres", f"{service}: unexpected variable {variable}"


def test_dockerfile_env_are_settings():
    broker_fields = {f"BROKER_{name.upper()}" for name in Settings.model_fields}
    for env in dockerfile_instructions("ENV"):
        for variable in re.findall(r"(BROKER_\w+)=", env):
            assert variable in broker_fields


def test_dependencies_and_health_conditions():
    for name, service in SERVICES.items():
        for other, rule in service.get("depends_on", {}).items():
            assert other in SERVICES, f"{name} depends on unknown {other}"
            if rule["condition"] == "service_healthy":
                has_check = "healthcheck" in SERVICES[other] and not SERVICES[other][
                    "healthcheck"
                ].get("disable")
                image_check = SERVICES[other].get("build") and "HEALTHCHECK" in DOCKERFILE
                assert has_check or image_check, f"{other} has no healthcheck"
    assert (
        SERVICES["broker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    )
    assert SERVICES["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_dockerfile_is_multi_stage_non_root_with_healthcheck():
    assert len(dockerfile_instructions("FROM")) >= 2
    [user] = dockerfile_instructions("USER")
    assert user.strip() not in ("root", "0")
    assert dockerfile_instructions("HEALTHCHECK")
    for copy in dockerfile_instructions("COPY"):
        if "--from" in copy:
            continue
        for source in shlex.split(copy)[:-1]:
            assert (REPO / source).exists(), f"COPY {source}: not in the repository"


def test_demo_runs_the_same_commands_and_variables():
    for service in ("broker", "sn-hospital", "scenario"):
        module = SERVICES[service]["command"][2]
        assert f'"{module}"' in DEMO, f"the demo does not start {module}"
        for variable in set(SERVICES[service]["environment"]) - CONTAINER_ONLY:
            assert f'"{variable}"' in DEMO, f"the demo does not set {variable}"


@pytest.mark.postgres
def test_migrate_service_command_runs_against_postgresql():
    url, drop = postgres_database()
    try:
        command = SERVICES["migrate"]["command"]
        result = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), command[0]), *command[1:]],
            env={**os.environ, "BROKER_DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert "newest migration" in result.stdout
    finally:
        drop()


def test_migrate_command_reports_an_unreachable_database_in_one_line():
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "fedbroker"), "db", "upgrade"],
        env={**os.environ, "BROKER_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "cannot use the database" in result.stderr and "Traceback" not in result.stderr


def test_compose_carries_no_default_secrets():
    for name, service in SERVICES.items():
        for variable, value in service.get("environment", {}).items():
            if "TOKEN" in variable:
                assert str(value).startswith("${") and ":?" in str(value), (
                    f"{name}: {variable} must come from the environment, with no default"
                )
