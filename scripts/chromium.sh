#!/usr/bin/env bash
# Chromium for the dashboard's browser test (webui, TestBrowser): installs Debian's chromium
# package at a pinned version with apt-get, so that the test drives the same browser everywhere.
# Chromium is installed system-wide (/usr/bin/chromium), so `install` needs root (CI runs as root).
#
#   chromium.sh install   install the pinned chromium unless /usr/bin/chromium is that version (idempotent)
#   chromium.sh path      print the browser's path (installing first if needed); logs go to stderr
#   chromium.sh version   print the installed package's version
#
# Needs: apt-get, apt-cache, dpkg-query (a Debian machine). Reaches only the machine's apt mirrors.
#
# Environment:
#   SKEIN_CHROMIUM_APT_UPDATE  0: never run `apt-get update`; by default it is run once when the
#                              apt indexes do not know the pinned version (a fresh container)
set -euo pipefail
shopt -s inherit_errexit

# ---- pinned version ----------------------------------------------------------------------------
# Debian 12's chromium (from bookworm-security). Debian keeps only the newest security build, so
# once this one is superseded `install` falls back to the apt candidate with a warning; then
# update the pin.
PACKAGE=chromium
CHROMIUM_VERSION='156.0.8078.108-1~deb12u1'
BINARY=/usr/bin/chromium

APT_UPDATE=${SKEIN_CHROMIUM_APT_UPDATE:-1}

log() { printf 'chromium: %s\n' "$*" >&2; }
warn() { printf 'chromium: WARNING: %s\n' "$*" >&2; }
die() { printf 'chromium: ERROR: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not on PATH${2:+ ($2)}"; }

# installed_version: the installed package's version ("" when not installed).
installed_version() {
  dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$PACKAGE" 2>/dev/null | awk '$1 == "installed" { print $2 }'
}

# candidate: the version apt would install now ("" if the indexes do not know the package).
candidate() {
  local c
  c=$(apt-cache policy "$PACKAGE" 2>/dev/null | awk '/Candidate:/ { print $2; exit }') || true
  [[ "$c" == "(none)" ]] && c=
  echo "$c"
}

known() { apt-cache madison "$PACKAGE" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | grep -qxF -- "$1"; }

UPDATED=0
apt_update() {
  ((UPDATED == 0)) || return 1
  UPDATED=1
  [[ "$APT_UPDATE" != 0 ]] || return 1
  log "refreshing the apt indexes (apt-get update; SKEIN_CHROMIUM_APT_UPDATE=0 to prevent)"
  apt-get update -qq >/dev/null 2>&1 || { warn "apt-get update failed"; return 1; }
}

# apt_install VERSION: install that version of the package and what it needs.
apt_install() {
  log "installing $PACKAGE $1 with apt-get (about 100 MB with its dependencies)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$PACKAGE=$1" "chromium-common=$1" >/tmp/skein-chromium-apt.log 2>&1 ||
    { grep -E '^(E|Err):' /tmp/skein-chromium-apt.log | head -n 3 >&2; return 1; }
}

ready() { [[ -x "$BINARY" && "$(installed_version)" == "$1" ]]; }

install() {
  ready "$CHROMIUM_VERSION" && return 0
  need apt-get "a Debian machine; elsewhere install Chromium and set SKEIN_CHROMIUM to its path"
  need apt-cache
  need dpkg-query
  [[ $(id -u) == 0 ]] || die "installing $PACKAGE needs root (apt-get install); or install Chromium yourself and set SKEIN_CHROMIUM"
  known "$CHROMIUM_VERSION" || apt_update || true
  if known "$CHROMIUM_VERSION" && apt_install "$CHROMIUM_VERSION"; then
    ready "$CHROMIUM_VERSION" || die "apt-get installed $PACKAGE, but $BINARY is not version $CHROMIUM_VERSION"
    log "installed $PACKAGE $CHROMIUM_VERSION: $BINARY"
    return 0
  fi
  local c
  c=$(candidate)
  [[ -n "$c" ]] || die "apt knows no $PACKAGE package (try: apt-get update; then rerun $0 install)"
  warn "the pinned $PACKAGE $CHROMIUM_VERSION cannot be installed (Debian keeps only the newest security" \
    "build); using the current candidate $c instead; update CHROMIUM_VERSION in scripts/chromium.sh"
  ready "$c" && return 0
  apt_install "$c" || die "could not install $PACKAGE $c"
  ready "$c" || die "apt-get installed $PACKAGE, but $BINARY is not version $c"
}

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

case ${1:-} in
  install) install; log "$PACKAGE $(installed_version): $BINARY" ;;
  path) install; echo "$BINARY" ;;
  version) v=$(installed_version); [[ -n "$v" ]] || die "not installed; run: $0 install"; echo "$v" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
