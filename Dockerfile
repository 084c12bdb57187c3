# boinc-gateway: the REST API (and, in the same process, the dispatcher of the configured
# backend). `docker compose up` runs it with a separate worker and PostgreSQL; alone it keeps
# its SQLite database and file store in the /data volume.
#
#   docker build -t boinc-gateway .
#   docker run --init -p 8000:8000 -e BGW_BOOTSTRAP_TOKEN=... -v bgw-data:/data boinc-gateway
#   docker run ... boinc-gateway worker          # only the dispatcher
# (--init: an init as PID 1 reaps what killed jobs leave behind; compose sets `init: true`.)
#   docker run ... boinc-gateway users create NAME

# ---- build: install the project into a virtual environment ---------------------------------
FROM python:3.11-slim AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
RUN python -m venv /opt/venv
COPY pyproject.toml README.md ./
COPY app ./app
COPY clients/__init__.py ./clients/__init__.py
COPY clients/gahp ./clients/gahp
RUN /opt/venv/bin/pip install --no-cache-dir .

# ---- runtime ---------------------------------------------------------------------------------
FROM python:3.11-slim

LABEL org.opencontainers.image.title="boinc-gateway" \
      org.opencontainers.image.description="REST gateway to BOINC: content-addressed files, batches and jobs" \
      org.opencontainers.image.licenses="LGPL-3.0-or-later"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    BGW_DATA_DIR=/data \
    BGW_LOG_JSON=true

# A fixed, unprivileged uid/gid so volume ownership is predictable across rebuilds.
RUN groupadd --system --gid 10001 bgw \
 && useradd --system --uid 10001 --gid bgw --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin bgw \
 && mkdir -p /data \
 && chown bgw:bgw /data

COPY --from=build /opt/venv /opt/venv

USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000

# Liveness with the interpreter the image already has (no curl in slim images).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4); sys.exit(0 if r.status == 200 else 1)"]

ENTRYPOINT ["boinc-gateway"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
