# Fairshare's container image: fairshare-controller, fairsharectl (also
# installed as the kubectl plugin kubectl-fairshare) and fairshare-reserve
# (the command of the reservation pods of fractional GPUs). Multi-stage: the build
# stage has the compiler and the -dev packages; the runtime stage has only
# the shared libraries the binaries load. Checked by tests/unit/
# test_manifests.c (test_dockerfile); see docs/operations.md, "Image".
#
#   docker build -t ghcr.io/fairshare-dev/fairshare:0.1.0 .
#
# Base images are pinned by digest (the multi-platform image index), so a
# rebuild gets the same bytes whatever the tag points to by then; the
# dated tag only says what the digest is. Both from Docker's official
# debian images, as recorded in github.com/docker-library/repo-info
# (repos/debian/remote/bookworm-20260918.md and
# bookworm-20260918-slim.md). To update: take a newer dated tag's index
# digest from there (or `docker buildx imagetools inspect
# debian:bookworm-YYYYMMDD`), for both stages at once.

FROM debian:bookworm-20260918@sha256:f37a335e82bca302e955fa39f9dfe28f1be618f016f8a2b56318e5a5111afc26 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make cmake pkg-config \
      libcurl4-openssl-dev libjansson-dev libyaml-dev libsqlite3-dev libevent-dev \
      libssl-dev libcmocka-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .git stays out of the context (.dockerignore): the commit comes in as a
# build argument (`make image` passes it), the date from SOURCE_DATE_EPOCH
# for a reproducible build; without them the binaries say "unknown" and
# the time of the build.
ARG FAIR_GIT_COMMIT=""
ARG SOURCE_DATE_EPOCH
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DFAIR_GIT_COMMIT="$FAIR_GIT_COMMIT" \
 && cmake --build /build -j "$(nproc)" --target fairshare-controller fairsharectl fairshare-reserve \
 && strip /build/fairshare-controller /build/fairsharectl /build/fairshare-reserve

FROM debian:bookworm-20260918-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251 AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcurl4 libjansson4 libyaml-0-2 libsqlite3-0 \
      libevent-2.1-7 libevent-openssl-2.1-7 libevent-pthreads-2.1-7 \
      libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/fairshare /etc/fairshare \
 && chown 65532:65532 /var/lib/fairshare
COPY --from=build /build/fairshare-controller /build/fairsharectl /build/fairshare-reserve /usr/local/bin/
RUN ln -s fairsharectl /usr/local/bin/kubectl-fairshare
# No shell: nothing in the image needs one (exec-form ENTRYPOINT; `kubectl
# exec` runs fairsharectl directly). Removed last, as RUN itself needs it.
RUN ["/usr/bin/rm", "-f", "/usr/bin/sh", "/usr/bin/dash", "/usr/bin/bash", "/usr/bin/rbash", \
     "/bin/sh", "/bin/dash", "/bin/bash", "/bin/rbash"]
LABEL org.opencontainers.image.title="fairshare" \
      org.opencontainers.image.description="GPU quota and fair-share controller for Kubernetes"
# A numeric non-root user, so that runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /var/lib/fairshare
EXPOSE 8080
# Exec form: no shell is involved in starting the controller.
ENTRYPOINT ["/usr/local/bin/fairshare-controller"]
CMD ["--config", "/etc/fairshare/config.yaml"]
