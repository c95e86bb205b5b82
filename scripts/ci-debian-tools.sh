#!/usr/bin/env bash
# Installs the Debian tools some tests use, from Debian's own packages (the only registry besides
# npm that this project's machines reach). Run as root: `make debian-tools`, and .ci/run before
# `make test`. Idempotent and quiet: one line per tool, "installed", "already present" or
# "unavailable (reason)". It never fails the run because apt cannot be reached: the tests that need
# a missing tool skip with a printed reason — except under CI (CI set), where they fail instead, so
# a missing tool is printed loudly here too.
#
#   bash scripts/ci-debian-tools.sh                 # the default set (DEFAULT_TOOLS below)
#   bash scripts/ci-debian-tools.sh prometheus ...  # named tools only
#
# Tools:
#   securesystemslib  python3-securesystemslib (+ python3-nacl, the libsodium Ed25519 backend it uses, only a
#                     Recommends) for Debian's /usr/bin/python3: the independent DSSE verification
#                     (test/fixtures/dsse_verify.py, test/integration/dsse-securesystemslib.test.ts)
#   systemd-analyze   the `systemd` package, only when systemd-analyze is missing (never started)
#   prometheus        prometheus + promtool, unpacked (apt-get download + dpkg-deb -x) into
#                     .tools/debian/ — the package is never installed, so no service is started or
#                     enabled; binaries: .tools/debian/usr/bin/{prometheus,promtool}
#
# To make a tool part of every CI run, add its name to DEFAULT_TOOLS.
set -uo pipefail
cd "$(dirname "$0")/.."

DEFAULT_TOOLS="securesystemslib systemd-analyze prometheus"
DEBIAN_DIR=".tools/debian"
# Bounded apt: a registry that does not answer costs seconds, not the CI run.
APT_OPTS=(-q -o Acquire::Retries=1 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20 -o DPkg::Lock::Timeout=120)
export DEBIAN_FRONTEND=noninteractive

say() { echo "debian-tools: $*"; }

missing=()
unavailable() {
  say "$1: unavailable ($2)"
  missing+=("$1")
}

is_root() { [ "$(id -u)" = 0 ]; }

# apt-get update at most once per run, and only when something has to be fetched.
updated=""
update_error=""
apt_update() {
  [ -n "$updated" ] && return 0
  updated=1
  local out rc=0
  out=$(apt-get "${APT_OPTS[@]}" update 2>&1) || rc=$?
  # apt-get update exits 0 when a source could not be fetched (it only warns): keep the warning too.
  update_error=$(printf '%s\n' "$out" | grep -E '^(E|W): ' | head -n 1)
  if [ "$rc" -ne 0 ] && [ -z "$update_error" ]; then update_error="apt-get update exited $rc"; fi
}

# The last error line of apt's output, plus the update failure if there was one (usually the cause).
apt_reason() {
  local line
  line=$(printf '%s\n' "$1" | grep -E '^(E|Err):' | tail -n 1)
  line=${line:-$(printf '%s\n' "$1" | tail -n 1)}
  if [ -n "$update_error" ]; then echo "${line}; apt-get update: ${update_error}"; else echo "$line"; fi
}

deb_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
deb_installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

apt_install() { # tool packages… → 0 or prints unavailable
  local tool=$1
  shift
  if ! is_root; then
    unavailable "$tool" "not root: run \`sudo make debian-tools\`"
    return 1
  fi
  apt_update
  local out
  if ! out=$(apt-get "${APT_OPTS[@]}" install -y --no-install-recommends "$@" 2>&1); then
    unavailable "$tool" "apt-get install $*: $(apt_reason "$out")"
    return 1
  fi
}

sslib_ok() { /usr/bin/python3 -c "import securesystemslib.signer" >/dev/null 2>&1; }

tool_securesystemslib() {
  local pkgs=(python3-securesystemslib python3-nacl)
  if [ ! -x /usr/bin/python3 ]; then pkgs+=(python3); fi
  if deb_installed python3-securesystemslib && deb_installed python3-nacl && sslib_ok; then
    say "securesystemslib: already present (python3-securesystemslib $(deb_version python3-securesystemslib))"
    return
  fi
  apt_install securesystemslib "${pkgs[@]}" || return
  if sslib_ok; then
    say "securesystemslib: installed (python3-securesystemslib $(deb_version python3-securesystemslib))"
  else
    unavailable securesystemslib "installed, but /usr/bin/python3 cannot import securesystemslib.signer"
  fi
}

tool_systemd_analyze() {
  if command -v systemd-analyze >/dev/null 2>&1; then
    say "systemd-analyze: already present ($(command -v systemd-analyze))"
    return
  fi
  apt_install systemd-analyze systemd || return
  if command -v systemd-analyze >/dev/null 2>&1; then
    say "systemd-analyze: installed (systemd $(deb_version systemd))"
  else
    unavailable systemd-analyze "systemd installed, but systemd-analyze is not on PATH"
  fi
}

tool_prometheus() {
  local bin="$DEBIAN_DIR/usr/bin"
  if "$bin/prometheus" --version >/dev/null 2>&1 && "$bin/promtool" --version >/dev/null 2>&1; then
    say "prometheus: already present ($bin/prometheus, $bin/promtool; $(cat "$DEBIAN_DIR/prometheus.version" 2>/dev/null || echo unknown version))"
    return
  fi
  # Only downloaded and unpacked (no root needed for that), so nothing is configured or started.
  apt_update_if_root
  local tmp out deb
  tmp=$(mktemp -d)
  # apt-get download writes into the working directory; as root it warns that it runs unsandboxed.
  if ! out=$(cd "$tmp" && apt-get "${APT_OPTS[@]}" download prometheus 2>&1); then
    rm -rf "$tmp"
    unavailable prometheus "apt-get download prometheus: $(apt_reason "$out")"
    return
  fi
  deb=$(ls "$tmp"/prometheus_*.deb 2>/dev/null | head -n 1)
  if ! out=$(mkdir -p "$DEBIAN_DIR" 2>&1); then
    rm -rf "$tmp"
    unavailable prometheus "$out"
    return
  fi
  if [ -z "$deb" ] || ! out=$(dpkg-deb -x "$deb" "$DEBIAN_DIR" 2>&1); then
    rm -rf "$tmp"
    unavailable prometheus "dpkg-deb -x: ${out:-no .deb downloaded}"
    return
  fi
  dpkg-deb -f "$deb" Version >"$DEBIAN_DIR/prometheus.version" 2>/dev/null
  rm -rf "$tmp"
  if "$bin/prometheus" --version >/dev/null 2>&1 && "$bin/promtool" --version >/dev/null 2>&1; then
    say "prometheus: installed ($bin/prometheus, $bin/promtool; $(cat "$DEBIAN_DIR/prometheus.version"))"
  else
    unavailable prometheus "unpacked into $DEBIAN_DIR, but $bin/prometheus or $bin/promtool does not run"
  fi
}

# A download needs package lists; only root can refresh them (without root, use what is there).
apt_update_if_root() { if is_root; then apt_update; fi; }

tools=("$@")
[ "${#tools[@]}" -gt 0 ] || read -r -a tools <<<"$DEFAULT_TOOLS"
for t in "${tools[@]}"; do
  case "$t" in
    securesystemslib) tool_securesystemslib ;;
    systemd-analyze | systemd) tool_systemd_analyze ;;
    prometheus | promtool) tool_prometheus ;;
    *)
      say "unknown tool '$t' (known: securesystemslib systemd-analyze prometheus)" >&2
      exit 2
      ;;
  esac
done

if [ "${#missing[@]}" -gt 0 ] && [ -n "${CI:-}" ]; then
  {
    echo "debian-tools: ************************************************************************"
    echo "debian-tools: CI is set and these tools are missing: ${missing[*]}"
    echo "debian-tools: the tests that need them FAIL under CI (they skip only outside CI)"
    echo "debian-tools: ************************************************************************"
  } >&2
fi
exit 0
