# Fairshare's container image: fairshare-controller and fairsharectl (also
# installed as the kubectl plugin kubectl-fairshare). Multi-stage: the build
# stage has the compiler and the -dev packages; the runtime stage has only
# the shared libraries the binaries load. Checked by tests/unit/
# test_manifests.c (test_dockerfile); see docs/operations.md, "Image".
#
#   docker build -t ghcr.io/fairshare-dev/fairshare:0.1.0 .

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make cmake pkg-config \
      libcurl4-openssl-dev libjansson-dev libyaml-dev libsqlite3-dev libevent-dev \
      libssl-dev libcmocka-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build /build -j "$(nproc)" --target fairshare-controller fairsharectl \
 && strip /build/fairshare-controller /build/fairsharectl

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcurl4 libjansson4 libyaml-0-2 libsqlite3-0 \
      libevent-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/fairshare /etc/fairshare \
 && chown 65532:65532 /var/lib/fairshare
COPY --from=build /build/fairshare-controller /build/fairsharectl /usr/local/bin/
RUN ln -s fairsharectl /usr/local/bin/kubectl-fairshare
LABEL org.opencontainers.image.title="fairshare" \
      org.opencontainers.image.description="GPU quota and fair-share controller for Kubernetes"
# A numeric non-root user, so that runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /var/lib/fairshare
EXPOSE 8080
# Exec form: no shell is involved in starting the controller.
ENTRYPOINT ["/usr/local/bin/fairshare-controller"]
CMD ["--config", "/etc/fairshare/config.yaml"]
