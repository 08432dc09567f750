# The collector image: ragpulse with its native extension, run as a non-root service.
# No Docker engine runs in this project's CI: tests/test_dockerfile.py checks this file's structure
# and runs its install steps (scripts/image_install.sh) into a fresh virtual environment.
#   docker build -t registry.example.com/ragpulse:0.1.0 .
#   docker build --build-arg WITH_MINILM=1 ...   # + the judge's MiniLM second tier weights (90 MB)
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG RUST_IMAGE=rust:1.95-slim-bookworm
ARG UV_VERSION=0.13.9
ARG WITH_MINILM=0

FROM ${RUST_IMAGE} AS rust

# Builder: compiles the native OTLP decoder with cargo and installs everything into /opt/ragpulse.
FROM ${PYTHON_IMAGE} AS builder
ARG UV_VERSION
ARG WITH_MINILM
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_NO_CACHE=1 \
    UV_LINK_MODE=copy \
    CARGO_HOME=/usr/local/cargo \
    RUSTUP_HOME=/usr/local/rustup \
    PATH=/usr/local/cargo/bin:$PATH
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m pip install "uv==${UV_VERSION}"
WORKDIR /src
COPY pyproject.toml README.md ./
COPY agent agent
COPY collector collector
COPY examples examples
COPY native native
COPY scripts/image_install.sh scripts/image_install.sh
RUN scripts/image_install.sh wheels /src /wheels
RUN scripts/image_install.sh venv /wheels /opt/ragpulse
RUN scripts/image_install.sh minilm /src /opt/ragpulse "${WITH_MINILM}"

# Final: the Python runtime and the venv only (no compiler, no cargo, no wheels, no sources).
FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 ragpulse \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /tmp ragpulse
COPY --from=builder /opt/ragpulse /opt/ragpulse
ENV PATH=/opt/ragpulse/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    HOME=/tmp
USER 10001:10001
EXPOSE 9466 4320
ENTRYPOINT ["ragpulse"]
CMD ["--help"]
