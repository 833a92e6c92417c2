#!/bin/sh
# Installs baton from its release archives: the one for this system and
# CPU, checked against the release's checksums.txt before anything is
# unpacked. A mismatch, or a system with no release, installs nothing.
#
#   curl -fsSL https://github.com/baton-agent/baton/releases/latest/download/install.sh | sh
#
# Settings (environment):
#   BATON_VERSION   a release such as v0.1.0 (default: the latest)
#   BATON_PREFIX    install into $BATON_PREFIX/bin (default: /usr/local when
#                   it is writable, else ~/.local)
#   BATON_BASE_URL  where the releases are (default:
#                   https://github.com/baton-agent/baton/releases)
#   BATON_OS, BATON_ARCH  another platform's archive (default: this one's)
set -eu

base=${BATON_BASE_URL:-https://github.com/baton-agent/baton/releases}
version=${BATON_VERSION:-latest}

say() { printf 'baton install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

os=${BATON_OS:-$(uname -s | tr '[:upper:]' '[:lower:]')}
arch=${BATON_ARCH:-$(uname -m)}
case "$arch" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
esac
case "$os" in
mingw* | msys* | cygwin*) os=windows ;;
esac
case "$os/$arch" in
linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64) ;;
windows/*) die "baton runs on Windows under WSL 2: run this script in a WSL shell" ;;
*) die "there is no baton release for $os/$arch; build it from source with Go 1.26: go install github.com/baton-agent/baton/cmd/baton@latest" ;;
esac
ext=tar.gz

if command -v curl >/dev/null 2>&1; then
	fetch() { curl -fsSL --proto '=https,http' -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
	fetch() { wget -q -O "$2" "$1"; }
else
	die "neither curl nor wget is installed"
fi
if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
	sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
elif command -v openssl >/dev/null 2>&1; then
	sha256() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
else
	die "no sha256sum, shasum or openssl to check the download with"
fi

if [ "$version" = latest ]; then
	url="$base/latest/download"
else
	url="$base/download/$version"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch "$url/checksums.txt" "$tmp/checksums.txt" || die "could not download $url/checksums.txt"
# The archive's name carries the version; checksums.txt names it.
archive=$(awk -v want="_${os}_${arch}.${ext}" '
	{ name = $2; sub(/^\*/, "", name) }
	name ~ /^baton_/ && substr(name, length(name) - length(want) + 1) == want { print name; exit }
' "$tmp/checksums.txt")
[ -n "$archive" ] || die "the release at $url has no archive for $os/$arch"
case "$archive" in
*/* | *..*) die "checksums.txt names $archive, which is not an archive name" ;;
esac
want=$(awk -v name="$archive" '{ n = $2; sub(/^\*/, "", n) } n == name { print $1; exit }' "$tmp/checksums.txt")

say "downloading $archive"
fetch "$url/$archive" "$tmp/$archive" || die "could not download $url/$archive"
got=$(sha256 "$tmp/$archive")
if [ "$got" != "$want" ]; then
	die "$archive does not match checksums.txt (sha256 $got, want $want): nothing was installed"
fi

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x"
bin=baton
[ -f "$tmp/x/$bin" ] || die "$archive holds no $bin"

if [ -n "${BATON_PREFIX:-}" ]; then
	prefix=$BATON_PREFIX
elif [ -w /usr/local/bin ] || { [ ! -e /usr/local/bin ] && [ -w /usr/local ]; }; then
	prefix=/usr/local
else
	prefix=$HOME/.local
fi
mkdir -p "$prefix/bin"
# Replace by rename, so a running baton (a hook mid-call) keeps its file.
# baton-hook, the companion that answers hooks faster, and baton-box-init,
# the init of baton's boxes (Linux), go beside baton.
for b in "$bin" baton-hook baton-box-init; do
	[ -f "$tmp/x/$b" ] || continue
	cp "$tmp/x/$b" "$prefix/bin/.$b.new"
	chmod 0755 "$prefix/bin/.$b.new"
	mv -f "$prefix/bin/.$b.new" "$prefix/bin/$b"
done
say "installed $prefix/bin/$bin and baton-hook ($archive)"
case ":$PATH:" in
*":$prefix/bin:"*) ;;
*) say "$prefix/bin is not on your PATH: add it, e.g. export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
