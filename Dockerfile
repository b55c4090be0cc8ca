# syntax=docker/dockerfile:1
# One image for the broker, the member clouds and the demo's scenario runner (different commands).

FROM python:3.11-slim AS build
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY member_cloud ./member_cloud
COPY demo ./demo
RUN pip install --no-cache-dir '.[dask,reports]'

FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 fedbroker
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY policies ./policies
RUN mkdir -p /app/data /app/keys /app/spool && chown fedbroker /app/data /app/keys /app/spool
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    BROKER_HOST=0.0.0.0 \
    BROKER_PORT=8000 \
    BROKER_POLICY_DIR=/app/policies \
    BROKER_SIGNING_KEY_DIR=/app/keys
USER fedbroker
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, httpx; sys.exit(httpx.get('http://127.0.0.1:8000/readyz').status_code != 200)"]
CMD ["python", "-m", "broker"]
