# baton worker: the binary, git, and the agent CLIs, on Debian. Build
# context: $TARGETPLATFORM/baton and deploy/images/ from this repository.
#
#   podman build -f deploy/images/worker.Dockerfile -t baton-worker .
#   podman run -e BATON_DATABASE_URL_FILE=/run/secrets/baton/database-url ... baton-worker
#
# AGENTS names the npm packages to install ("" for none, when the agent is
# a command of your own); BASE may name an image that already has git.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG TARGETPLATFORM
ARG AGENTS="@anthropic-ai/claude-code @openai/codex"
RUN set -eu; \
	need="git ca-certificates"; \
	if [ -n "$AGENTS" ]; then need="$need nodejs npm"; fi; \
	missing=""; for p in $need; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done; \
	if [ -n "$missing" ]; then \
		apt-get update; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; \
		rm -rf /var/lib/apt/lists/*; \
	fi; \
	if [ -n "$AGENTS" ]; then npm install -g --no-audit --no-fund $AGENTS; npm cache clean --force; fi; \
	useradd --uid 10001 --user-group --home-dir /data --no-create-home baton; \
	install -d -m 0700 -o baton -g baton /data
COPY --chmod=0755 $TARGETPLATFORM/baton $TARGETPLATFORM/baton-hook /usr/bin/
ENV HOME=/data BATON_DATA_DIR=/data
USER baton
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["/usr/bin/baton"]
CMD ["worker"]
