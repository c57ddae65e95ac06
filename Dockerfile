# syntax=docker/dockerfile:1
# One image for every role of tablehall (k8s/): `tablehall gateway`, `tablehall worker`, `celery --app=ratings
# worker` and `celery --app=ratings beat` (k8s/ sets the command), or the whole service alone (`tablehall serve`,
# the default). Build: docker build -t tablehall:dev .   Checked offline by tests/test_dockerfile.py.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: the Python package and its generated gRPC stubs -----------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/tablehall
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protos/ protos/
COPY gateway/ gateway/
COPY workers/ workers/
COPY ratings/ ratings/
COPY tablehall/ tablehall/
# The install of the README and .ci/run, without the dev extras and not editable: setup.py's build_py runs
# grpcio-tools' protoc (a build requirement) and writes the *_pb2*, *_connect stubs into the package.
RUN /opt/tablehall/bin/python -m pip install --no-cache-dir . \
    && /opt/tablehall/bin/python -I -c "import protos.tablehall.v1.matches_pb2_grpc, protos.tablehall.v1.host_pb2_grpc, tablehall.cli"

# --- web: the browser page (web/), served by the gateway's HTTP door --------------------------------------------
FROM ${NODE_IMAGE} AS web
# web/scripts/gen.mjs runs grpcio-tools' protoc for the TypeScript stubs: a Python with grpcio-tools
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/protoc \
    && /opt/protoc/bin/pip install --no-cache-dir "grpcio-tools>=1.66,<2"
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY protos/ /src/protos/
COPY web/ ./
RUN PYTHON=/opt/protoc/bin/python npm run build

# --- runtime: no compilers, no sources, not root ----------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 tablehall \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin tablehall
COPY --from=build /opt/tablehall /opt/tablehall
COPY --from=web /src/web/dist /opt/tablehall-web
ENV PATH=/opt/tablehall/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TABLEHALL_WEB_DIR=/opt/tablehall-web
# a writable working directory for the embedded mode's SQLite file (`tablehall serve`); k8s mounts /tmp
WORKDIR /tmp
USER 10001:10001
# gateway gRPC, worker gRPC, /metrics, the gateway's HTTP door
EXPOSE 50051 50061 9100 8080
ENTRYPOINT ["tablehall"]
CMD ["serve", "--host", "0.0.0.0"]
