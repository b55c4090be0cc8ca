"""docker-compose.yml, the Dockerfile and .dockerignore, checked without a Docker engine.

Every command, module, environment variable and secret they name must exist in the code, and the
local demo (demo/federation.py) must use the same commands and variables. hadolint lints the
Dockerfile and the Compose CLI validates the compose file (both from the dev extras, both run
offline); the rest is read as a reviewer would: who gets which secret, which volume, which
network, which port.
"""

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest
import yaml
from packaging.requirements import Requirement

from broker.cli.app import build_parser as _parser
from broker.config import SECRETS_DIR as BROKER_SECRETS_DIR
from broker.config import Settings
from broker.main import create_app
from member_cloud.config import SECRETS_DIR as MEMBER_SECRETS_DIR
from member_cloud.config import MemberSettings
from tests.conftest import ADMIN_TOKEN, POLICIES, REPO, postgres_database
from tests.servers import ServerThread

COMPOSE_TEXT = (REPO / "docker-compose.yml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
SERVICES = COMPOSE["services"]
DOCKERFILE = (REPO / "Dockerfile").read_text()
LOCK = (REPO / "requirements.lock").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
BIN = Path(sys.executable).parent
# The uid the image runs as: secrets and volumes are made for it.
UID = "10001"
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
    # The compose file's member clouds are registered by the register-* jobs, which write each
    # one's key into a volume of its own; the demo's register themselves with the admin token
    # (one operator runs all of them on one machine) and keep the key in their data folder.
    "MEMBER_API_KEY_FILE",
    # PostgreSQL's password, kept out of BROKER_DATABASE_URL: the demo runs on SQLite.
    "BROKER_DATABASE_PASSWORD",
}


def dockerfile_instructions(name: str) -> list[str]:
    joined = DOCKERFILE.replace("\\\n", " ")
    return [
        line.split(None, 1)[1] for line in joined.splitlines() if line.split(None, 1)[:1] == [name]
    ]


def program(command: list[str]) -> list[str]:
    """The program a command runs: ``sh -c '... exec python -m x'`` runs ``python -m x``."""
    if command[:2] == ["sh", "-c"]:
        words = shlex.split(command[2])
        return words[words.index("exec") + 1 :]
    return command


def check_command(command: list[str]) -> None:
    command = program(command)
    if command[:2] == ["python", "-m"]:
        module = command[2]
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"no module {module}"
        if spec.submodule_search_locations:  # a package must have __main__
            assert importlib.util.find_spec(f"{module}.__main__"), f"{module} has no __main__"
    elif command[0] == "fedbroker":
        _parser().parse_args(command[1:])  # exits (SystemExit) on an unknown command
    elif command[0] == "dask":  # the cluster's own command line, from the dask extra
        dask = BIN / "dask"
        run = subprocess.run([dask, *command[1:], "--help"], capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr.decode()
    elif command[0] == "mkdir":  # the image's coreutils; checked by test_dask_profile_storage
        assert command[1:3] == ["-p", "-m"], command
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
        module = program(SERVICES[service]["command"])[2]
        assert f'"{module}"' in DEMO, f"the demo does not start {module}"
        # what a container reads from a secret file, the demo sets as a variable
        from_files = {
            target.upper()
            for target in secret_targets(service).values()
            if target.startswith(("broker_", "member_"))
        }
        from_files |= set(re.findall(r"(SCENARIO_\w+)=", " ".join(SERVICES[service]["command"])))
        for variable in (set(SERVICES[service]["environment"]) | from_files) - CONTAINER_ONLY:
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


# --- helpers: the compose file as a reviewer reads it ---------------------------------------


def secret_targets(service: str) -> dict[str, str]:
    """Secret name -> its file under /run/secrets in the service's containers."""
    targets = {}
    for ref in SERVICES[service].get("secrets", []):
        if isinstance(ref, str):
            targets[ref] = ref
        else:
            targets[ref["source"]] = ref.get("target", ref["source"])
    return targets


def mounts(service: str) -> list[dict]:
    """Each volume of a service as {source, target, read_only, subpath}."""
    found = []
    for volume in SERVICES[service].get("volumes", []):
        if isinstance(volume, str):
            source, target, *options = volume.split(":")
            found.append(
                {"source": source, "target": target, "read_only": "ro" in options, "subpath": None}
            )
        else:
            found.append(
                {
                    "source": volume["source"],
                    "target": volume["target"],
                    "read_only": volume.get("read_only", False),
                    "subpath": volume.get("volume", {}).get("subpath"),
                }
            )
    return found


def networks(service: str) -> set[str]:
    if SERVICES[service].get("network_mode") == "none":
        return set()
    return set(SERVICES[service].get("networks", ["default"]))


OUR_IMAGE = SERVICES["broker"]["image"]
OURS = sorted(name for name, service in SERVICES.items() if service.get("image") == OUR_IMAGE)
MEMBERS = sorted(n for n in OURS if SERVICES[n].get("command") == ["python", "-m", "member_cloud"])
BROKER_FIELDS = {f"broker_{name}" for name in Settings.model_fields}
MEMBER_FIELDS = {f"member_{name}" for name in MemberSettings.model_fields}


def tool(name: str) -> Path:
    """A checker from the dev extras; the test is skipped, and says why, when it is missing."""
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]'")
    return Path(found)


def run_tool(args: list, **kwargs) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)
    except OSError as error:  # a binary built for another platform
        pytest.skip(f"{args[0]} cannot run here: {error}")


# --- static checks: hadolint and the Compose CLI, offline ---------------------------------------


def test_hadolint_passes_the_dockerfile():
    run = run_tool([tool("hadolint"), "--no-color", "Dockerfile"], cwd=REPO)
    assert run.returncode == 0, run.stdout + run.stderr


# Compose 5.6 warns about uid, gid and mode on every secret, though it applies them to secrets
# sourced from the environment (it copies those into the container rather than bind-mount them).
SWARM_ONLY_WARNING = "is not supported outside Swarm mode and will be ignored"


def compose_config(path: Path, *profiles: str) -> subprocess.CompletedProcess:
    args = [tool("docker-compose"), "-f", path]
    for profile in profiles:
        args += ["--profile", profile]
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("FEDBROKER_", "COMPOSE_"))
    }
    return run_tool([*args, "config", "--quiet"], cwd=REPO, env=environment)


@pytest.mark.parametrize("profiles", [(), ("dask",), ("demo", "dask")])
def test_compose_cli_validates_the_file(profiles):
    run = compose_config(REPO / "docker-compose.yml", *profiles)
    assert run.returncode == 0, run.stderr
    other = [line for line in run.stderr.splitlines() if line and SWARM_ONLY_WARNING not in line]
    assert not other, other


def test_compose_cli_refuses_a_broken_file(tmp_path):
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_TEXT.replace("environment: FEDBROKER_ADMIN_TOKEN", "enviroment: X"))
    run = compose_config(broken)
    assert run.returncode != 0 and "enviroment" in run.stderr


# --- the image ------------------------------------------------------------------------------------


def test_one_image_built_once_and_shared():
    assert [name for name, service in SERVICES.items() if "build" in service] == ["broker"]
    assert set(OURS) == set(SERVICES) - {"postgres"}


def test_base_images_are_exact_releases():
    [python] = [arg for arg in dockerfile_instructions("ARG") if arg.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-[a-z]+", python), python
    assert "--python-version 3.11" in LOCK.splitlines()[1]  # the lock is made for that Python
    assert dockerfile_instructions("FROM") == [
        "${PYTHON_IMAGE} AS build",
        "${PYTHON_IMAGE} AS runtime",
    ]
    assert re.fullmatch(r"postgres:\d+\.\d+-[a-z]+", SERVICES["postgres"]["image"])


def test_dependencies_are_installed_before_the_code_is_copied():
    steps = [
        line.strip()
        for line in DOCKERFILE.replace("\\\n", " ").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    lock_copy = steps.index("COPY requirements.lock ./")
    [lock_install] = [i for i, step in enumerate(steps) if "-r requirements.lock" in step]
    assert "--require-hashes" in steps[lock_install]
    code = [
        i for i, step in enumerate(steps) if re.match(r"COPY (broker|member_cloud|demo) ", step)
    ]
    assert lock_copy < lock_install < min(code)
    [code_install] = [i for i, step in enumerate(steps) if re.search(r"pip install .* \.$", step)]
    assert "--no-deps" in steps[code_install] and code_install > max(code)


def installed_requirements(requirement: Requirement) -> list[Requirement]:
    """What the extras of a requirement add (psycopg[binary] -> psycopg-binary), as installed."""
    from importlib.metadata import requires

    added = []
    for text in requires(requirement.name) or []:
        extra = Requirement(text)
        if extra.marker and any(extra.marker.evaluate({"extra": e}) for e in requirement.extras):
            added.append(extra)
    return added


def test_lock_pins_every_dependency_of_the_image_with_hashes():
    from packaging.utils import canonicalize_name

    pins = {
        canonicalize_name(name): version
        for name, version in re.findall(r"^([A-Za-z0-9][\w.\-]*)==([^\s\\;]+)", LOCK, re.M)
    }
    body = "\n".join(line for line in LOCK.splitlines() if not line.startswith("#"))
    entries = re.split(r"\n(?=[A-Za-z0-9])", body.strip())
    assert len(entries) == len(pins)
    assert all("==" in entry and "--hash=sha256:" in entry for entry in entries)
    optional = PYPROJECT["project"]["optional-dependencies"]
    wanted = [
        *PYPROJECT["project"]["dependencies"],
        *optional["dask"],
        *optional["reports"],
        *PYPROJECT["build-system"]["requires"],  # installed from the lock: --no-build-isolation
    ]
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"requirements.lock has no {name}: make it again (see its header)"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, pyproject.toml wants {requirement}"
        )
        for extra in installed_requirements(requirement):
            assert canonicalize_name(extra.name) in pins, f"{text}: {extra.name} is not locked"


# --- .dockerignore: what the build context holds -----------------------------------------------

DOCKERIGNORE = (REPO / ".dockerignore").read_text()


def _pattern(pattern: str) -> str:
    regex, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif pattern[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif pattern[i] == "?":
            regex, i = regex + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            regex, i = regex + pattern[i : end + 1], end + 1
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return regex


def left_out(path: str) -> bool:
    """Whether `docker build` leaves a path out of its context: the last .dockerignore pattern
    that matches the path or one of its folders decides, `!` bringing it back."""
    parts = path.split("/")
    verdict = False
    for line in DOCKERIGNORE.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        regex = _pattern(line.lstrip("!").strip("/"))
        if any(re.fullmatch(regex, "/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            verdict = not keep
    return verdict


@pytest.mark.parametrize(
    "path",
    [
        "data/signing-keys/3f2a.pem",  # the demo's private signing keys
        "data/member-sn-hospital/broker_api_key",
        "data/broker.db",
        "secrets/admin_token",
        ".env",
        ".git/config",
        ".venv/bin/python",
        "site/index.html",
        "tests/conftest.py",
        ".pytest_cache/v/cache/lastfailed",
        "broker/__pycache__/config.cpython-311.pyc",
        "broker/keys/old.pem",
    ],
)
def test_dockerignore_keeps_keys_and_local_state_out_of_the_build(path):
    assert left_out(path)


def test_dockerignore_keeps_what_the_dockerfile_copies():
    for copy in dockerfile_instructions("COPY"):
        if "--from" in copy:
            continue
        for source in shlex.split(copy)[:-1]:
            files = [REPO / source] if (REPO / source).is_file() else (REPO / source).rglob("*")
            for path in files:
                relative = path.relative_to(REPO).as_posix()
                if path.is_file() and "__pycache__" not in relative:
                    assert not left_out(relative), f"{relative} is copied but left out"


# --- secrets ---------------------------------------------------------------------------------


def test_no_service_holds_a_secret_in_its_environment():
    for name, service in SERVICES.items():
        for variable, value in service.get("environment", {}).items():
            assert not re.search(r"TOKEN|PASSWORD(?!_FILE)|API_KEY(?!_FILE)", variable), (
                f"{name}: {variable} belongs in a secret file"
            )
            if "://" in str(value):
                assert urlsplit(str(value)).password is None, f"{name}: {variable} has a password"
    assert not re.search(r"\$\{?FEDBROKER_\w*(TOKEN|PASSWORD)", COMPOSE_TEXT)
    for name, secret in COMPOSE["secrets"].items():
        assert {"environment", "file"} & set(secret), f"secret {name} has no source"


def test_each_secret_file_is_a_setting_of_the_program_that_reads_it():
    assert BROKER_SECRETS_DIR == MEMBER_SECRETS_DIR == Path("/run/secrets")
    for name in OURS:
        command = program(SERVICES[name]["command"])
        for target in secret_targets(name).values():
            assert "/" not in target, f"{name}: {target} must lie in /run/secrets"
            if command[:3] == ["python", "-m", "broker"] or command[0] == "fedbroker":
                assert target.lower() in BROKER_FIELDS, f"{name}: {target} is no broker setting"
            elif command[2].startswith("member_cloud"):
                assert target.lower() in MEMBER_FIELDS, f"{name}: {target} is no member setting"
            else:
                assert f"/run/secrets/{target}" in SERVICES[name]["command"][2], (name, target)
    [password] = secret_targets("postgres")
    assert SERVICES["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"] == (
        f"/run/secrets/{secret_targets('postgres')[password]}"
    )
    assert secret_targets("broker")[password] == "broker_database_password"
    assert secret_targets("migrate")[password] == "broker_database_password"


def test_secret_files_are_readable_by_the_service_user_alone():
    assert dockerfile_instructions("USER") == [f"{UID}:{UID}"]
    for name in OURS:
        for ref in SERVICES[name].get("secrets", []):
            assert isinstance(ref, dict), f"{name}: {ref} gets the default owner and mode 0444"
            assert (ref["uid"], ref["gid"]) == (UID, UID), name
            assert int(str(ref["mode"]).removeprefix("0o"), 8) == 0o400, name


def test_settings_read_secret_files(tmp_path):
    (tmp_path / "broker_admin_token").write_text(ADMIN_TOKEN + "\n")
    (tmp_path / "broker_database_password").write_text("p@ss:w/rd %41\n")
    settings = Settings(
        _secrets_dir=tmp_path, database_url="postgresql+psycopg://fedbroker@postgres:5432/fedbroker"
    )
    assert settings.admin_token.get_secret_value() == ADMIN_TOKEN
    url = urlsplit(settings.database_url)
    assert (url.username, unquote(url.password), url.hostname, url.path) == (
        "fedbroker",
        "p@ss:w/rd %41",
        "postgres",
        "/fedbroker",
    )
    (tmp_path / "member_local_token").write_text("local-token-0123456789\n")
    member = MemberSettings(_secrets_dir=tmp_path, id="sn-hospital", jurisdiction="SN", api_key="k")
    assert member.local_token.get_secret_value() == "local-token-0123456789"


def test_database_password_given_twice_is_refused():
    with pytest.raises(ValueError, match="give it once"):
        Settings(database_url="postgresql+psycopg://u:one@db/x", database_password="two")


# --- per-member keys: the admin token stays with the federation ----------------------------------


def test_admin_token_reaches_no_member_cloud():
    holders = {name for name in SERVICES if "admin_token" in secret_targets(name)}
    assert holders == {"broker", "scenario", *(f"register-{member}" for member in MEMBERS)}
    assert len(MEMBERS) == 3
    for member in MEMBERS:
        assert not any("ADMIN" in variable for variable in SERVICES[member]["environment"])


@pytest.mark.parametrize("member", MEMBERS)
def test_each_member_reads_its_own_key_from_a_volume_of_its_own(member):
    environment = SERVICES[member]["environment"]
    register = f"register-{member}"
    key_file = environment["MEMBER_API_KEY_FILE"]
    [mount] = [m for m in mounts(member) if key_file.startswith(m["target"] + "/")]
    assert mount["read_only"]
    [written] = [m for m in mounts(register) if m["source"] == mount["source"]]
    assert written["target"] == mount["target"] and not written["read_only"]
    holders = {
        name for name in SERVICES if any(m["source"] == mount["source"] for m in mounts(name))
    }
    assert holders == {member, register}
    for variable, value in SERVICES[register]["environment"].items():
        assert environment[variable] == value  # registered as the member runs
    assert SERVICES[member]["depends_on"][register]["condition"] == "service_completed_successfully"
    assert program(SERVICES[register]["command"]) == ["python", "-m", "member_cloud.register"]


@pytest.fixture(scope="module")
def broker_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deployment")
    settings = Settings(
        database_url=f"sqlite:///{tmp}/broker.db",
        admin_token=ADMIN_TOKEN,
        policy_dir=POLICIES,
        signing_key_dir=tmp / "keys",
        spool_dir=tmp / "spool",
        inbox_allowed_networks=["127.0.0.0/8"],
    )
    server = ServerThread(create_app(settings)).start()
    yield server
    server.stop()


def test_register_writes_a_key_the_broker_accepts_once(broker_server, tmp_path):
    key_file = tmp_path / "keys" / "broker_api_key"
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MEMBER_", "BROKER_"))}
    environment |= {
        "MEMBER_ID": "sn-hospital",
        "MEMBER_JURISDICTION": "SN",
        "MEMBER_PUBLIC_URL": "http://127.0.0.1:9",
        "MEMBER_BROKER_URL": broker_server.url,
        "MEMBER_API_KEY_FILE": str(key_file),
        "MEMBER_ADMIN_TOKEN": ADMIN_TOKEN,
    }

    def register(**changes: str | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in (environment | changes).items() if v is not None}
        command = [sys.executable, "-m", "member_cloud.register"]
        return subprocess.run(
            command, env=env, cwd=REPO, capture_output=True, text=True, timeout=120
        )

    first = register()
    assert first.returncode == 0, first.stderr
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = json.loads(key_file.read_text())["api_key"]
    member = httpx.get(
        f"{broker_server.url}/v1/members/sn-hospital", headers={"Authorization": f"Bearer {key}"}
    )
    assert member.status_code == 200 and member.json()["jurisdiction"] == "SN"
    again = register()  # every `docker compose up` runs it: the key stays, nothing is registered
    assert again.returncode == 0, again.stderr
    assert json.loads(key_file.read_text())["api_key"] == key
    # the member cloud starts from that file, without the admin token
    from member_cloud.credentials import resolve_api_key

    settings = MemberSettings(id="sn-hospital", jurisdiction="SN", api_key_file=key_file)
    settings.broker_url = broker_server.url
    assert resolve_api_key(settings) == key
    missing = register(MEMBER_ADMIN_TOKEN=None)
    assert missing.returncode == 2 and "MEMBER_ADMIN_TOKEN" in missing.stderr
    refused = register(
        MEMBER_ADMIN_TOKEN="not-the-admin-token",
        MEMBER_ID="fr-research",
        MEMBER_JURISDICTION="FR",
        MEMBER_API_KEY_FILE=str(tmp_path / "fr-research" / "broker_api_key"),
    )
    assert refused.returncode == 1 and "refused MEMBER_ADMIN_TOKEN" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "fr-research" / "broker_api_key").exists()


# --- health checks, ports, networks ---------------------------------------------------------------


def test_image_health_check_asks_the_port_in_broker_port(broker_server):
    [check] = dockerfile_instructions("HEALTHCHECK")
    command = json.loads(check[check.index("CMD") + 3 :])
    assert command[:2] == ["python", "-c"]
    from tests.servers import free_port

    def probe(port: int) -> int:
        environment = {**os.environ, "BROKER_PORT": str(port)}
        run = [sys.executable, "-c", command[2]]
        return subprocess.run(run, env=environment, capture_output=True, timeout=60).returncode

    assert probe(broker_server.port) == 0
    assert probe(free_port()) != 0


def test_member_health_check_asks_the_port_in_member_port():
    for member in MEMBERS:
        test = SERVICES[member]["healthcheck"]["test"]
        assert 'os.environ["MEMBER_PORT"]' in test[-1] and "8101" not in test[-1]


def test_ports_are_published_on_this_host_only():
    published = [(n, p) for n, service in SERVICES.items() for p in service.get("ports", [])]
    assert published
    for name, port in published:
        assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_member_clouds_reach_neither_the_database_nor_the_cluster():
    closed = networks("postgres") | networks("dask-scheduler")
    assert networks("broker") >= closed
    for name in OURS:
        if program(SERVICES[name]["command"])[:3] in (
            ["python", "-m", "member_cloud"],
            ["python", "-m", "member_cloud.register"],
            ["python", "-m", "demo.scenario"],
        ):
            assert not networks(name) & closed, name
    for network in closed:
        assert COMPOSE["networks"][network]["internal"] is True


# --- the dask profile: storage the workers can write, member data in it --------------------------


def test_dask_profile_storage_is_laid_out_writable_and_fed_by_each_member():
    environment = SERVICES["broker"]["environment"]
    roots = json.loads(environment["BROKER_REFERENCE_ROOTS"])
    output = environment["BROKER_REFERENCE_OUTPUT"]
    [storage] = [m for m in mounts("dask-worker") if output.startswith(m["target"] + "/")]
    volume, root = storage["source"], storage["target"]
    for name in ("broker", "storage-init"):
        assert {"source": volume, "target": root, "read_only": False, "subpath": None} in mounts(
            name
        )
    # the image makes the mount point, owned by the user it runs as: an empty named volume
    # mounted there takes that owner, so the workers (and storage-init) can write in it
    made = " ".join(dockerfile_instructions("RUN"))
    assert re.search(rf"mkdir -p [^&]*{root}", made) and re.search(
        rf"chown {UID}:{UID} [^&]*{root}", made
    )
    # storage-init lays out each member's folder and the output, once, before anyone uses them
    command = SERVICES["storage-init"]["command"]
    folders = {folder.rstrip("/") for granted in roots.values() for folder in granted}
    assert set(command[4:]) == folders | {output}
    for name in ("broker", "dask-worker"):
        assert SERVICES[name]["depends_on"]["storage-init"]["condition"] == (
            "service_completed_successfully"
        )
    # each member mounts its own folder only, at the path it names in a transfer by reference
    for member, granted in roots.items():
        [folder] = granted
        [mount] = [m for m in mounts(member) if m["source"] == volume]
        assert mount["target"] == folder.rstrip("/")
        assert mount["subpath"] == Path(folder).relative_to(root).as_posix()
    assert SERVICES["dask-worker"]["profiles"] == SERVICES["dask-scheduler"]["profiles"] == ["dask"]
