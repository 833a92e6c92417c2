# baton serve, from scratch: the static binary, CA certificates, a
# non-root user, the data directory as a volume. Build context (as
# GoReleaser's dockers_v2 lays it out): $TARGETPLATFORM/baton, and
# deploy/images/ from this repository with ca-certificates.crt copied in.
#
#   podman run -p 7070:7070 -v baton-data:/data ghcr.io/baton-agent/baton:0.1.0
#
# The API and dashboard (--workers 0, the default command here): agents
# need git and their CLIs, which the worker image has.
FROM scratch
ARG TARGETPLATFORM
COPY deploy/images/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
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
