# syntax=docker/dockerfile:1
# leasehold: build the release binary, then run it alone on a slim Debian as a
# non-root user, with the database on the /data volume.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY migrations ./migrations
COPY assets ./assets
COPY benches ./benches
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -m 0755 target/release/leasehold /usr/local/bin/leasehold

FROM debian:bookworm-slim
# curl answers the HEALTHCHECK; nothing else is added.
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin leasehold \
    && mkdir -p /data \
    && chown leasehold:leasehold /data
COPY --from=build /usr/local/bin/leasehold /usr/local/bin/leasehold
ENV LEASEHOLD_LISTEN=0.0.0.0:8474
ENV LEASEHOLD_DB=/data/leasehold.db
VOLUME ["/data"]
WORKDIR /data
USER leasehold
EXPOSE 8474
# Ready means the database takes a write: /readyz answers 503 when it cannot.
# It answers any Host; 127.0.0.1 is a loopback one besides. Without an auth
# file the API answers only loopback Hosts (`docker run -p 127.0.0.1:8474:8474`
# and localhost:8474) unless LEASEHOLD_ALLOWED_HOSTS names others (DNS rebinding).
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8474/readyz"]
ENTRYPOINT ["leasehold"]
CMD ["serve"]
