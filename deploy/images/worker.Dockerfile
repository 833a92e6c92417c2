# baton worker: baton, baton-hook and baton-box-init, git, Node.js and the
# agent CLIs, on Debian. Build context (as GoReleaser's dockers_v2 lays it
# out): the three under $TARGETPLATFORM/; everything else is
# fetched here and checked against the sums below, so a snapshot builds it
# as a release does (release/ builds it with podman and runs it).
#
#   podman run -e BATON_DATABASE_URL_FILE=/run/secrets/baton/database-url ... ghcr.io/baton-agent/baton-worker:0.1.0
#
# Node.js comes from the npm registry's node-linux-<cpu> packages (the
# official builds, repackaged): Claude Code needs Node 22 or later, and
# Debian's is older. The versions are the ones the real-harness tests run
# (release/ checks that they agree); AGENTS names other npm packages ("" for
# none, when the agent is a command of your own), BASE another Debian image
# (a mirror of debian:trixie-slim).
ARG BASE=debian:trixie-slim

FROM ${BASE} AS tools
ARG TARGETARCH
ARG NODE_VERSION=22.23.3
ARG NODE_SHA256_AMD64=00b5c43d88958dbbf45339c4d5e9a76289c7e25876fd08270b379e485e151fc5
ARG NODE_SHA256_ARM64=894b9938b215d40b3a38db094ef436d02b3bc7dd16f04fca145a4735cd9e9035
ARG NPM_VERSION=10.9.8
ARG NPM_SHA256=3e68f9b5fcaf1a94ba0e37e6a565c920b2be6bd98998c50970385d6a692af780
# Node.js trusts the system's CA store, as git and curl do: an image made
# from this one that adds a CA (for a proxy) needs nothing more.
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN set -eu; \
	apt-get update; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl; \
	arch=${TARGETARCH:-$(dpkg --print-architecture)}; \
	case "$arch" in \
	amd64) cpu=x64 sum=$NODE_SHA256_AMD64 ;; \
	arm64) cpu=arm64 sum=$NODE_SHA256_ARM64 ;; \
	*) echo "no Node.js package for $arch" >&2; exit 1 ;; \
	esac; \
	cd /tmp; \
	curl -fsSL -o node.tgz "https://registry.npmjs.org/node-linux-$cpu/-/node-linux-$cpu-$NODE_VERSION.tgz"; \
	curl -fsSL -o npm.tgz "https://registry.npmjs.org/npm/-/npm-$NPM_VERSION.tgz"; \
	printf '%s  node.tgz\n%s  npm.tgz\n' "$sum" "$NPM_SHA256" | sha256sum -c -; \
	tar -xzf node.tgz -C /usr/local --strip-components=1 package/bin/node; \
	mkdir -p /usr/local/lib/node_modules/npm; \
	tar -xzf npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1; \
	ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \
	ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx; \
	rm -f node.tgz npm.tgz; \
	node --version; npm --version
ARG AGENTS="@anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0"
RUN set -eu; \
	if [ -n "$AGENTS" ]; then \
		npm install -g --no-audit --no-fund --no-update-notifier $AGENTS; \
		npm cache clean --force; \
	fi; \
	rm -rf /root/.npm

FROM ${BASE} AS runtime
RUN set -eu; \
	missing=""; for p in git ca-certificates; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done; \
	if [ -n "$missing" ]; then \
		apt-get update; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; \
		rm -rf /var/lib/apt/lists/*; \
	fi; \
	useradd --uid 10001 --user-group --home-dir /data --no-create-home baton; \
	install -d -m 0700 -o baton -g baton /data

FROM runtime AS agents
COPY --from=tools /usr/local/ /usr/local/

FROM agents
ARG TARGETPLATFORM
COPY --chmod=0755 $TARGETPLATFORM/baton $TARGETPLATFORM/baton-hook $TARGETPLATFORM/baton-box-init /usr/bin/
ENV HOME=/data BATON_DATA_DIR=/data NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
USER baton
WORKDIR /data
VOLUME ["/data"]
ENTRYPOINT ["/usr/bin/baton"]
CMD ["worker"]
