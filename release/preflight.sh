#!/bin/sh
# Checks, before a release builds anything, that every channel can be
# published: the tokens are set and work. A release that stops here has
# built and published nothing; one that stopped at the npm step after
# the GitHub release went out would be half-published.
#
#   HOMEBREW_TAP_TOKEN=... NODE_AUTH_TOKEN=... GITHUB_TOKEN=... sh release/preflight.sh
#
# TAP names the Homebrew tap (default baton-agent/homebrew-tap).
set -eu

tap=${TAP:-baton-agent/homebrew-tap}
fail() {
	printf 'release preflight: %s: nothing was built or published; fix it and push the tag again (or re-run the workflow)\n' "$*" >&2
	exit 1
}

for v in GITHUB_TOKEN HOMEBREW_TAP_TOKEN NODE_AUTH_TOKEN; do
	eval "val=\${$v:-}"
	# shellcheck disable=SC2154 # set by the eval above
	[ -n "$val" ] || fail "$v is not set (the repository's release secrets: GITHUB_TOKEN, HOMEBREW_TAP_TOKEN, NPM_TOKEN)"
done

who=$(npm whoami --registry https://registry.npmjs.org/ 2>/dev/null) ||
	fail "npm does not accept NPM_TOKEN (npm whoami failed)"
printf 'release preflight: npm publishes as %s\n' "$who" >&2

push=$(GH_TOKEN=$HOMEBREW_TAP_TOKEN gh api "repos/$tap" --jq .permissions.push 2>/dev/null) ||
	fail "HOMEBREW_TAP_TOKEN cannot read $tap"
[ "$push" = true ] || fail "HOMEBREW_TAP_TOKEN cannot push to $tap"
printf 'release preflight: the tap %s takes pushes\n' "$tap" >&2
