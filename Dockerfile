# sluiced and sluice in a container: a build stage with the compilers and Debian 12's
# development packages (and, for the GPU variant, NVIDIA's CUDA toolkit), and a slim runtime
# stage with only the shared libraries the two programs load, run as a non-root user.
#
#   CPU:  docker build -t sluice:cpu .     (buildah bud --format docker -t sluice:cpu .)
#   GPU:  docker build --build-arg CUDA=13-0 -t sluice:gpu .
# (buildah's default OCI format has no HEALTHCHECK: give it --format docker.)
#
# Both stages start from BASE_IMAGE, a Debian 12 image (the package names below are Debian
# 12's). The GPU variant adds NVIDIA's CUDA repository for Debian 12 to the build stage only:
# the CUDA runtime is linked statically, so the runtime stage needs nothing of CUDA but the
# driver, which the NVIDIA container toolkit mounts (docker run --gpus all, podman run
# --device nvidia.com/gpu=all). See docs/operations.md.
ARG BASE_IMAGE=docker.io/library/debian:12

FROM ${BASE_IMAGE} AS build
# "" builds the CPU device only; a CUDA toolkit version as NVIDIA's packages spell it (13-0)
# builds the CUDA device too.
ARG CUDA=""
ARG CUDA_REPO=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
ARG JOBS=2
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      cmake ninja-build g++ pkg-config ca-certificates \
      libabsl-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libssl-dev libtomlplusplus-dev nlohmann-json3-dev prometheus-cpp-dev \
      libtcmalloc-minimal4 \
 && rm -rf /var/lib/apt/lists/*
RUN if [ -n "$CUDA" ]; then \
      apt-get update -q \
      && apt-get install -y -q --no-install-recommends curl gnupg \
      && curl -fsSL "$CUDA_REPO/cuda-keyring_1.1-1_all.deb" -o /tmp/cuda-keyring.deb \
      && dpkg -i /tmp/cuda-keyring.deb \
      && apt-get update -q \
      && apt-get install -y -q --no-install-recommends \
           "cuda-nvcc-$CUDA" "cuda-cudart-dev-$CUDA" "cuda-cccl-$CUDA" \
      && rm -rf /var/lib/apt/lists/* /tmp/cuda-keyring.deb; \
    fi
ENV PATH=/usr/local/cuda/bin:${PATH}
COPY . /src
# The analyzer (`sluice analyze`, LLVM 14) runs where the sources are, not in the daemon's
# image: it is left out here (a client machine builds it, or uses `sluice analyze --server`).
RUN cmake -S /src -B /build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DSLUICE_TESTS=OFF -DSLUICE_GRPC=ON -DSLUICE_LLVM=OFF \
      -DSLUICE_CUDA="$([ -n "$CUDA" ] && echo ON || echo OFF)" \
 && cmake --build /build -j "$JOBS" --target sluiced sluice_cli \
 && install -D -m 0755 /build/bin/sluiced /out/usr/local/bin/sluiced \
 && install -D -m 0755 /build/bin/sluice /out/usr/local/bin/sluice \
 && install -D -m 0755 /build/bin/sluice-remote /out/usr/local/bin/sluice-remote \
 && install -D -m 0644 /src/deploy/tenants.example.toml /out/usr/share/sluice/tenants.example.toml

FROM ${BASE_IMAGE} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
# Exactly the shared libraries sluiced, sluice and sluice-remote load (ldd), and CA
# certificates for `sluice --tls` without --tls_ca.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      libabsl20220623 libgrpc++1.51 libgrpc29 libprotobuf32 libssl3 libtomlplusplus3 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libtcmalloc-minimal4 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 sluice \
 && useradd --system --uid 10001 --gid sluice --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sluice \
 && install -d -o root -g sluice -m 0750 /etc/sluice
COPY --from=build /out/ /
# The NVIDIA container toolkit mounts the driver for these (the GPU variant).
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 10001:10001
# 7450: sessions (gRPC); 7451: health checks only (plaintext gRPC); 9464: Prometheus metrics.
EXPOSE 7450 7451 9464
# SIGTERM drains: no new sessions, running ones get --drain_timeout (20 s here) to finish.
# Give the container longer than that to stop (docker run --stop-timeout=30, podman run
# --stop-timeout=30, Kubernetes terminationGracePeriodSeconds: 30).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/sluice", "health", "--server=127.0.0.1:7451", "--timeout=4s"]
ENTRYPOINT ["/usr/local/bin/sluiced"]
# Serves every address, so it needs tenants (mount /etc/sluice/tenants.toml; see
# /usr/share/sluice/tenants.example.toml), or --allow_unauthenticated given on purpose.
CMD ["--listen=0.0.0.0:7450", "--health_listen=0.0.0.0:7451", "--metrics_listen=0.0.0.0:9464", \
     "--tenants_file=/etc/sluice/tenants.toml", "--log_format=json", "--drain_timeout=20s"]
