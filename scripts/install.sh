#!/bin/sh
# Installs the vigil binary for this machine.
#
#   curl -fsSL https://releases.vigil.dev/install.sh | sh
#   curl -fsSL https://releases.vigil.dev/install.sh | sh -s -- --version 0.1.0 --prefix /opt/vigil/bin
#
# Options:
#   --prefix DIR   install DIR/vigil (default: ~/.local/bin, or /usr/local/bin as root)
#   --version V    install release V (default: the latest release)
#   --base URL     release location (default: $VIGIL_DOWNLOAD_BASE, else https://releases.vigil.dev)
#   -h, --help     show this help
#
# Release layout under the base URL: install.sh, latest/ and v<version>/, each version directory
# holding vigil-<os>-<arch>[-musl] and SHA256SUMS.
#
# What it does: detects the OS (linux, darwin), the architecture (x64, arm64) and on Linux the C
# library (glibc, musl); downloads the matching binary and SHA256SUMS with curl or wget into a
# temporary directory; checks the binary's SHA-256 against SHA256SUMS; copies it next to the
# destination, checks that it runs (`vigil --version`), and only then renames it over DIR/vigil
# (one atomic rename: a running or concurrent vigil never sees a half-written file). Nothing is
# installed unless every step succeeded. It never edits shell startup files: if DIR is not on
# PATH it says so and leaves the choice to you.
#
# The whole script is one function called on the last line, so a truncated download runs nothing.

set -u

VIGIL_DEFAULT_BASE="https://releases.vigil.dev"

say() { printf 'vigil-install: %s\n' "$*"; }
die() {
  printf 'vigil-install: error: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<'EOF'
usage: install.sh [--prefix DIR] [--version V] [--base URL]
  --prefix DIR   install DIR/vigil (default: ~/.local/bin, or /usr/local/bin as root)
  --version V    install release V, e.g. 0.1.0 (default: the latest release)
  --base URL     release location (default: $VIGIL_DOWNLOAD_BASE, else https://releases.vigil.dev)
Downloads vigil-<os>-<arch>[-musl] and SHA256SUMS, verifies the checksum, then installs.
Never edits shell startup files.
EOF
}

# -- platform -------------------------------------------------------------------------------------

detect_libc() {
  # glibc's ldd says "GNU libc"/"GLIBC"; musl's ldd says "musl libc" (on stderr).
  ldd_out=$(ldd --version 2>&1 || true)
  case $ldd_out in
  *musl*) echo musl; return ;;
  *GLIBC* | *"GNU libc"* | *glibc*) echo glibc; return ;;
  esac
  if getconf GNU_LIBC_VERSION >/dev/null 2>&1; then
    echo glibc
    return
  fi
  for f in /lib/ld-musl-*.so.1; do
    if [ -e "$f" ]; then
      echo musl
      return
    fi
  done
  echo glibc
}

detect_platform() {
  os_raw=$(uname -s 2>/dev/null) || die "cannot run uname -s"
  arch_raw=$(uname -m 2>/dev/null) || die "cannot run uname -m"
  case $os_raw in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die "unsupported platform: operating system '$os_raw' (vigil is built for Linux and macOS); nothing was installed" ;;
  esac
  case $arch_raw in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "unsupported platform: architecture '$arch_raw' on $os_raw (vigil is built for x86_64 and arm64); nothing was installed" ;;
  esac
  libc=""
  if [ "$os" = darwin ] && [ "$arch" = x64 ]; then
    # An x86_64 shell under Rosetta on Apple Silicon: the native binary is the better choice.
    if [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then arch=arm64; fi
  fi
  if [ "$os" = linux ]; then libc=$(detect_libc); fi
  asset="vigil-$os-$arch"
  platform="$os-$arch"
  if [ "$libc" = musl ]; then
    asset="$asset-musl"
    platform="$platform (musl)"
  elif [ "$libc" = glibc ]; then
    platform="$platform (glibc)"
  fi
}

# -- tools ----------------------------------------------------------------------------------------

have() { command -v "$1" >/dev/null 2>&1; }

pick_downloader() {
  if have curl; then
    downloader=curl
  elif have wget; then
    downloader=wget
  else
    die "neither curl nor wget is installed; install one of them and re-run; nothing was installed"
  fi
}

# download URL FILE
download() {
  if [ "$downloader" = curl ]; then
    curl -fsSL --connect-timeout 30 --retry 2 -o "$2" "$1"
  elif wget --version >/dev/null 2>&1; then
    wget -q -T 30 -t 2 -O "$2" "$1" # GNU wget
  else
    wget -q -T 30 -O "$2" "$1" # BusyBox wget
  fi
}

pick_sha256() {
  if have sha256sum; then
    sha_tool=sha256sum
  elif have shasum; then
    sha_tool=shasum
  else
    die "neither sha256sum nor shasum is installed, so the download cannot be verified; install coreutils (sha256sum) or perl (shasum) and re-run; nothing was installed"
  fi
}

# sha256_of FILE -> lower-case hex
sha256_of() {
  if [ "$sha_tool" = sha256sum ]; then
    out=$(sha256sum "$1") || return 1
  else
    out=$(shasum -a 256 "$1") || return 1
  fi
  printf '%s\n' "${out%%[ 	]*}" | tr 'A-F' 'a-f'
}

# expected_sum SUMSFILE NAME -> the one hex digest SUMSFILE lists for NAME
expected_sum() {
  found=""
  while read -r s n _rest || [ -n "${s:-}" ]; do
    n=${n#\*} # "sum *name" (binary mode) as well as "sum  name"
    if [ "$n" = "$2" ]; then
      if [ -n "$found" ] && [ "$found" != "$s" ]; then return 2; fi
      found=$s
    fi
    s=""
  done <"$1"
  [ -n "$found" ] || return 1
  case $found in *[!0-9a-fA-F]*) return 3 ;; esac
  [ ${#found} -eq 64 ] || return 3
  printf '%s\n' "$found" | tr 'A-F' 'a-f'
}

# -- main -----------------------------------------------------------------------------------------

tmpdir=""
staged=""
cleanup() {
  if [ -n "$staged" ]; then rm -f "$staged"; fi
  if [ -n "$tmpdir" ]; then rm -rf "$tmpdir"; fi
}

main() {
  base=${VIGIL_DOWNLOAD_BASE:-$VIGIL_DEFAULT_BASE}
  prefix=""
  version=""
  while [ $# -gt 0 ]; do
    case $1 in
    --prefix | --version | --base)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (see --help)"; fi
      opt=$1
      val=$2
      shift 2
      ;;
    --prefix=* | --version=* | --base=*)
      opt=${1%%=*}
      val=${1#*=}
      [ -n "$val" ] || die "$opt needs a value (see --help)"
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    case $opt in
    --prefix) prefix=$val ;;
    --version) version=$val ;;
    --base) base=$val ;;
    esac
  done
  base=${base%/}
  case $base in
  http://* | https://*) ;;
  *) die "the download base must be an http(s) URL, got '$base'" ;;
  esac
  if [ -n "$version" ]; then
    version=${version#v}
    case $version in
    "" | *[!0-9A-Za-z.+-]*) die "not a version: '$version' (expected e.g. 0.1.0)" ;;
    esac
    release_url="$base/v$version"
  else
    release_url="$base/latest"
  fi

  # Everything that can be refused without the network is refused first.
  detect_platform
  pick_downloader
  pick_sha256
  if [ -z "$prefix" ]; then
    if [ "$(id -u)" = 0 ]; then
      prefix=/usr/local/bin
    elif [ -n "${HOME:-}" ]; then
      prefix=$HOME/.local/bin
    else
      die "HOME is not set; choose the install directory with --prefix DIR"
    fi
  fi
  if [ ! -d "$prefix" ]; then
    [ ! -e "$prefix" ] || die "--prefix $prefix exists and is not a directory; nothing was installed"
    mkdir -p "$prefix" 2>/dev/null || die "cannot create $prefix (not writable); choose another --prefix or run with the rights to write there; nothing was installed"
    say "created $prefix"
  fi
  prefix=$(cd "$prefix" && pwd -P) || die "cannot enter $prefix; nothing was installed"
  [ -w "$prefix" ] || die "$prefix is not writable; choose another --prefix (e.g. ~/.local/bin) or run with the rights to write there; nothing was installed"
  dest="$prefix/vigil"
  if [ -d "$dest" ]; then die "$dest is a directory; nothing was installed"; fi

  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  tmpdir=$(mktemp -d 2>/dev/null || mktemp -d -t vigil-install) || die "cannot create a temporary directory"

  say "platform: $platform -> $asset"
  say "downloading $asset and SHA256SUMS from $release_url (with $downloader)"
  download "$release_url/SHA256SUMS" "$tmpdir/SHA256SUMS" ||
    die "download failed: $release_url/SHA256SUMS (is ${version:+version $version of }vigil published at $base?); nothing was installed"
  download "$release_url/$asset" "$tmpdir/$asset" ||
    die "download failed: $release_url/$asset (is ${version:+version $version of }vigil published for $platform at $base?); nothing was installed"

  expected=$(expected_sum "$tmpdir/SHA256SUMS" "$asset")
  case $? in
  0) ;;
  1) die "SHA256SUMS at $release_url has no line for $asset, so it cannot be verified; nothing was installed" ;;
  2) die "SHA256SUMS at $release_url lists $asset more than once with different checksums; nothing was installed" ;;
  *) die "SHA256SUMS at $release_url has a malformed line for $asset; nothing was installed" ;;
  esac
  actual=$(sha256_of "$tmpdir/$asset") || die "cannot compute the SHA-256 of the download"
  if [ "$actual" != "$expected" ]; then
    die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual; the file is corrupt or was tampered with; nothing was installed"
  fi
  say "verified sha256 $actual ($asset, SHA256SUMS)"

  # Stage next to the destination (same filesystem, so the final mv is one atomic rename).
  staged=$(mktemp "$prefix/.vigil.XXXXXX" 2>/dev/null) || {
    staged=""
    die "cannot write to $prefix; choose another --prefix or run with the rights to write there; nothing was installed"
  }
  cp "$tmpdir/$asset" "$staged" || die "cannot write to $prefix (disk full?); nothing was installed"
  chmod 0755 "$staged" || die "cannot make $staged executable; nothing was installed"
  [ "$(sha256_of "$staged")" = "$expected" ] || die "the copy in $prefix does not match the verified download; nothing was installed"
  if ! new_version=$("$staged" --version 2>"$tmpdir/run.err"); then
    hint=""
    case $asset in *-musl) hint=" (on Alpine: apk add libstdc++ libgcc)" ;; esac
    die "the downloaded $asset does not run on this machine$hint: $(head -c 300 "$tmpdir/run.err" 2>/dev/null); nothing was installed"
  fi
  if [ -n "$version" ] && [ "$new_version" != "$version" ]; then
    die "asked for version $version, but the downloaded binary reports '$new_version'; nothing was installed"
  fi

  previous=""
  if [ -e "$dest" ] || [ -L "$dest" ]; then
    previous=$("$dest" --version 2>/dev/null) || previous="unknown version"
  fi
  mv -f "$staged" "$dest" || die "cannot move the new binary into place at $dest; nothing was installed"
  staged=""

  if [ -n "$previous" ]; then
    say "installed vigil $new_version at $dest (replaced $previous)"
  else
    say "installed vigil $new_version at $dest"
  fi
  case ":${PATH:-}:" in
  *":$prefix:"*) say "run: vigil --version" ;;
  *)
    say "note: $prefix is not on your PATH. This script does not edit shell startup files; add it yourself, e.g."
    say "  export PATH=\"$prefix:\$PATH\""
    ;;
  esac
}

main "$@"
