# The plinth image (docs/operations.md, "Deploying with containers").
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin plinth

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
    fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home /var/lib/plinth plinth \
 && install -d -o plinth -g plinth /var/lib/plinth
COPY --from=build /src/target/release/plinth /usr/local/bin/plinth
USER plinth
WORKDIR /var/lib/plinth
ENV PLINTH_DATA_DIR=/var/lib/plinth \
    PLINTH_LISTEN=0.0.0.0:8080 \
    PLINTH_LOG_FORMAT=json
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/plinth"]
CMD ["serve"]
