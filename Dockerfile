# syntax=docker/dockerfile:1
# One image for the broker, the member clouds, the one-shot jobs (migrate, register-*) and the
# demo's scenario runner: the compose services differ by command (docker-compose.yml).
#
# The base image is an exact release. Pin its digest where you build, so that a rebuild gets
# the same bytes: `docker buildx imagetools inspect python:3.11.14-slim-bookworm` prints it, then
#   docker build --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:<digest> .
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Dependencies first, from the lock (exact versions, checked against their hashes): this layer is
# built again when requirements.lock changes, not at every change of the code.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes --no-deps -r requirements.lock
# Then the code, without its dependencies (the lock has them, and the build backend).
COPY pyproject.toml README.md LICENSE ./
COPY broker ./broker
COPY member_cloud ./member_cloud
COPY fedbroker ./fedbroker
COPY demo ./demo
RUN pip install --no-cache-dir --no-deps --no-build-isolation .

FROM ${PYTHON_IMAGE} AS runtime
# A fixed, numeric uid and gid: volumes, secrets (uid 10001 in the compose file) and a
# Kubernetes runAsNonRoot check all see the same user.
RUN groupadd --system --gid 10001 fedbroker \
    && useradd --system --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin fedbroker
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY policies ./policies
# Mount points owned by that user: an empty named volume mounted on one takes its owner and mode,
# so the broker's data, keys and spool, a member's key and the federation's storage (where the
# Dask workers write) are writable by uid 10001.
RUN mkdir -p /app/data /app/keys /app/spool /data/federation \
    && chown 10001:10001 /app/data /app/keys /app/spool /data/federation \
    && chmod 0750 /app/data /app/keys /app/spool /data/federation
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    BROKER_HOST=0.0.0.0 \
    BROKER_PORT=8000 \
    BROKER_POLICY_DIR=/app/policies \
    BROKER_SIGNING_KEY_DIR=/app/keys
USER 10001:10001
EXPOSE 8000
# The broker's readiness on the port it serves (BROKER_PORT); the member clouds and the one-shot
# jobs set their own check, or none, in the compose file.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, sys, httpx; sys.exit(httpx.get(f\"http://127.0.0.1:{os.environ.get('BROKER_PORT', '8000')}/readyz\").status_code != 200)"]
CMD ["python", "-m", "broker"]
