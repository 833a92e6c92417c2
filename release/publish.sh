#!/bin/sh
# Publishes a release whose every channel has built: the npm packages, the
# Homebrew cask, the images' `latest` tags, and last the GitHub release,
# a draft until then. A prerelease goes to npm under the `next` tag and
# moves no `latest` (npm's, the images', GitHub's) and no cask. Each step
# skips what is already published, so a re-run finishes a release that
# stopped half-way.
#
#   sh release/publish.sh VERSION DIST NPM_DIR
#
# VERSION is the release's (0.2.0, 0.2.0-rc.1), DIST GoReleaser's dist
# directory (the cask in homebrew/Casks/), NPM_DIR the packed npm
# tarballs. Environment: GITHUB_TOKEN (gh), HOMEBREW_TAP_TOKEN,
# NODE_AUTH_TOKEN (npm); TAP and IMAGES override where things go.
set -eu

[ $# -eq 3 ] || {
	echo "usage: publish.sh VERSION DIST NPM_DIR" >&2
	exit 2
}
version=$1 dist=$2 npmdir=$3
tap=${TAP:-baton-agent/homebrew-tap}
images=${IMAGES:-ghcr.io/baton-agent/baton ghcr.io/baton-agent/baton-worker}
say() { printf 'publish: %s\n' "$*" >&2; }

case "$version" in
*-*) prerelease=true npmtag=next ;;
*) prerelease=false npmtag=latest ;;
esac

# npm: the platform packages first, then the package that depends on them.
top=""
for f in "$npmdir"/*.tgz; do
	[ -f "$f" ] || {
		say "no npm tarballs in $npmdir"
		exit 1
	}
	case "$(basename "$f")" in
	baton-agent-baton-"$version".tgz) top=$f ;;
	*) set -- "$@" "$f" ;;
	esac
done
[ -n "$top" ] || {
	say "no @baton-agent/baton $version tarball in $npmdir"
	exit 1
}
shift 3 # the platform tarballs remain
for f in "$@" "$top"; do
	name=$(tar -xzOf "$f" package/package.json | sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' | head -n 1)
	if [ "$(npm view "$name@$version" version 2>/dev/null || true)" = "$version" ]; then
		say "$name@$version is on npm already"
		continue
	fi
	say "npm publish $name@$version --tag $npmtag"
	npm publish "$f" --access public --provenance --tag "$npmtag"
done

# git reaches the tap with the token in its environment, as an HTTP
# header for github.com: in a URL it would be in git's arguments, which
# every process on the machine can read, and in the clone's .git/config.
# printf is the shell's own, so the token is in no argument list here.
tapgit() (
	GIT_CONFIG_COUNT=1
	GIT_CONFIG_KEY_0=http.https://github.com/.extraheader
	GIT_CONFIG_VALUE_0="Authorization: Basic $(printf 'x-access-token:%s' "$HOMEBREW_TAP_TOKEN" | base64 | tr -d '\n')"
	export GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
	git "$@"
)

# The cask: only for releases (Homebrew has no prereleases).
if [ "$prerelease" = false ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	tapgit clone -q --depth 1 "https://github.com/$tap.git" "$tmp/tap"
	mkdir -p "$tmp/tap/Casks"
	cp "$dist/homebrew/Casks/baton.rb" "$tmp/tap/Casks/baton.rb"
	git -C "$tmp/tap" add Casks/baton.rb
	if git -C "$tmp/tap" diff --cached --quiet; then
		say "the cask in $tap is $version already"
	else
		git -C "$tmp/tap" -c user.name=baton-release -c user.email=baton@users.noreply.github.com commit -q -m "baton $version"
		tapgit -C "$tmp/tap" push -q origin HEAD
		say "pushed the cask to $tap"
	fi
fi

# The images' latest: the digest GoReleaser pushed as the version, signed
# by that digest already.
if [ "$prerelease" = false ]; then
	for image in $images; do
		say "$image:latest is $image:$version"
		docker buildx imagetools create --tag "$image:latest" "$image:$version"
	done
fi

# Last, the release itself.
say "the GitHub release v$version goes public"
gh release edit "v$version" --draft=false --prerelease="$prerelease" --latest="$([ "$prerelease" = false ] && echo true || echo false)"
