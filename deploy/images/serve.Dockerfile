# baton serve, from scratch: the static binary, Debian's CA certificates, a
# non-root user, the data directory as a volume. Build context (as
# GoReleaser's dockers_v2 lays it out): $TARGETPLATFORM/baton and
# deploy/images/rootfs; nothing else, so a snapshot builds it as a release
# does (release/ builds it with podman and runs it).
#
#   podman run -p 7070:7070 -v baton-data:/data ghcr.io/baton-agent/baton:0.1.0
#
# The API and dashboard (--workers 0, the default command here): agents
# need git and their CLIs, which the worker image has. BASE may name
# another Debian image (a mirror of debian:trixie-slim).
ARG BASE=debian:trixie-slim

# The CA bundle is the same for every platform: take it on the builder's.
FROM --platform=$BUILDPLATFORM ${BASE} AS certs
RUN set -eu; \
	if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
		apt-get update; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates; \
		rm -rf /var/lib/apt/lists/*; \
	fi

FROM scratch
ARG TARGETPLATFORM
COPY --from=certs /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 --chmod=0700 deploy/images/rootfs/data /data
COPY --chmod=1777 deploy/images/rootfs/tmp /tmp
COPY --chmod=0755 $TARGETPLATFORM/baton /usr/bin/baton
ENV HOME=/data BATON_DATA_DIR=/data SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7070
HEALTHCHECK --interval=30s --timeout=5s CMD ["/usr/bin/baton", "healthcheck", "--ready"]
ENTRYPOINT ["/usr/bin/baton"]
CMD ["serve", "--addr", "0.0.0.0:7070", "--workers", "0", "--log-format", "json"]
