# syntax=docker/dockerfile:1
# gpu-extender container image. Build and push in one command (docker, podman or buildah):
#   scripts/image.sh REGISTRY/gpu-extender:0.1.0
# Build stage: compile the release binary (no test suite, so no Criterion).
FROM debian:12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libmicrohttpd-dev libevent-dev libcurl4-openssl-dev libcjson-dev libgnutls28-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DGX_TESTS=OFF \
 && cmake --build /build --target gpu-extender -j"$(nproc)" \
 && /build/gpu-extender --version \
 && /build/gpu-extender --check-config config/config.json

# Runtime stage: only the shared libraries the binary links against.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libevent-2.1-7 libcurl4 libcjson1 libgnutls30 libyaml-0-2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/gpu-extender /usr/local/bin/gpu-extender
# Default configuration; in Kubernetes the ConfigMap volume (generated from
# manifests/config.json, or the chart's config) is mounted over /etc/gpu-extender.
COPY config/config.json /etc/gpu-extender/config.json
LABEL org.opencontainers.image.title="gpu-extender" \
      org.opencontainers.image.description="kube-scheduler extender for GPU placement and time-slice sharing" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["/usr/local/bin/gpu-extender"]
CMD ["--config", "/etc/gpu-extender/config.json"]
