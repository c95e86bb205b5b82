#!/bin/sh
# Builds a release from a clean, tagged checkout:  scripts/release.sh [vX.Y.Z]   (make release [TAG=vX.Y.Z])
#
# Refuses, before running anything, unless
#   - the working tree is clean (no modified, staged or untracked files outside .gitignore),
#   - the tag (the argument, or the one v* tag on HEAD) exists, points at HEAD and is exactly
#     "v" + package.json's version.
# Then runs `make check` (type-check and every test suite), `make dist` into
# dist/release/v<version> (every target, SHA256SUMS, BUILD-INFO.json), verifies the checksums and
# that every target is there, checks that this machine's binary is byte-identical to the dist/vigil
# the tests ran against and prints the right version, and lays out the release directory:
#
#   dist/release/install.sh
#   dist/release/v<version>/vigil-<os>-<arch>[-musl], SHA256SUMS, BUILD-INFO.json
#   dist/release/latest -> v<version>
#
# Publishing (uploading dist/release/ to the release location) is left to the operator.

set -eu

say() { printf 'release: %s\n' "$*"; }
die() {
  printf 'release: error: %s\n' "$*" >&2
  exit 1
}

[ $# -le 1 ] || die "usage: scripts/release.sh [vX.Y.Z]"
cd "$(dirname "$0")/.."
command -v git >/dev/null 2>&1 || die "git is not installed"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$(pwd) is not a git checkout"

TARGETS="linux-x64 linux-arm64 linux-x64-musl linux-arm64-musl darwin-x64 darwin-arm64"

dirty=$(git status --porcelain --untracked-files=normal)
if [ -n "$dirty" ]; then
  printf '%s\n' "$dirty" >&2
  die "the working tree is not clean (above); commit or remove these changes first: a release is built from exactly the tagged commit"
fi

version=$(sed -n 's/^  "version": *"\([^"]*\)".*/\1/p' package.json | head -n 1)
[ -n "$version" ] || die "cannot read the version from package.json"

tag=${1:-}
head=$(git rev-parse HEAD)
if [ -z "$tag" ]; then
  tags=$(git tag --points-at HEAD | grep '^v' || true)
  [ -n "$tags" ] || die "HEAD carries no v* tag; tag it (git tag v$version) or pass the tag"
  [ "$(printf '%s\n' "$tags" | wc -l | tr -d ' ')" = 1 ] || die "HEAD carries several v* tags ($(echo "$tags" | tr '\n' ' ')); pass the one to release"
  tag=$tags
fi
git rev-parse -q --verify "refs/tags/$tag" >/dev/null || die "no tag $tag"
[ "$(git rev-parse "$tag^{commit}")" = "$head" ] || die "tag $tag does not point at HEAD ($(git rev-parse --short HEAD)); check it out first"
[ "$tag" = "v$version" ] || die "tag $tag does not match package.json's version $version (expected v$version)"

say "vigil $version at $(git rev-parse --short=12 HEAD) ($tag)"
say "running the tests: make check"
make check || die "make check failed; no release was built"

out=dist/release
rm -rf "$out"
mkdir -p "$out"
say "building every target: make dist DIST_DIR=$out/v$version"
make dist DIST_DIR="$out/v$version" || die "make dist failed; the release is incomplete"

dir="$out/v$version"
[ -f "$dir/SHA256SUMS" ] || die "$dir/SHA256SUMS is missing"
for t in $TARGETS; do
  [ -s "$dir/vigil-$t" ] || die "target $t is missing from $dir"
  grep -q "  vigil-$t\$" "$dir/SHA256SUMS" || die "SHA256SUMS has no line for vigil-$t"
done
if command -v sha256sum >/dev/null 2>&1; then
  (cd "$dir" && sha256sum -c --quiet SHA256SUMS) || die "checksums do not verify"
else
  (cd "$dir" && shasum -a 256 -c --quiet SHA256SUMS) || die "checksums do not verify"
fi
# The binary for this machine must be the one the test suites just ran against (make check built
# dist/vigil from this same tree; build.ts makes the two byte-identical), and it must run.
host=""
case "$(uname -s)-$(uname -m)" in
Linux-x86_64) host=linux-x64 ;;
Linux-aarch64 | Linux-arm64) host=linux-arm64 ;;
Darwin-x86_64) host=darwin-x64 ;;
Darwin-arm64) host=darwin-arm64 ;;
esac
case $host in
linux-*) if ldd --version 2>&1 | grep -qi musl; then host="$host-musl"; fi ;;
esac
if [ -n "$host" ]; then
  [ -f dist/vigil ] || die "dist/vigil is missing after make check"
  if cmp -s dist/vigil "$dir/vigil-$host"; then
    say "vigil-$host is byte-identical to dist/vigil, the binary the test suites ran against"
  else
    case $host in
    darwin-*) say "warning: vigil-$host differs from dist/vigil (macOS code signature); not byte-identical to the tested binary" ;;
    *) die "vigil-$host differs from dist/vigil, the binary the test suites ran against" ;;
    esac
  fi
  ran=$("$dir/vigil-$host" --version) || die "vigil-$host --version failed"
  [ "$ran" = "$version" ] || die "vigil-$host --version says '$ran', expected $version"
else
  say "warning: $(uname -s)-$(uname -m) is not a release target; no built binary was run here"
fi

cp scripts/install.sh "$out/install.sh"
chmod 0755 "$out/install.sh"
ln -s "v$version" "$out/latest"

# The build must not have touched tracked files either.
[ -z "$(git status --porcelain --untracked-files=normal)" ] || die "the working tree changed during the build; not releasing"
[ "$(git rev-parse HEAD)" = "$head" ] || die "HEAD moved during the build; not releasing"

say "release $tag ready in $out:"
(cd "$out" && ls -l install.sh latest "v$version") | sed 's/^/  /'
say "publish: upload $out/ to the release location (install.sh, v$version/, and latest/ as a copy of or redirect to v$version/)"
