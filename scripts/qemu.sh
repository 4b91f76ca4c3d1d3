#!/usr/bin/env bash
# QEMU user-mode emulation for skein's arm64 bootstrap: installs Debian's statically linked
# qemu-aarch64-static into a cache directory, so that the integration suite can execute the
# GOARCH=arm64 bootstrap (what template.yaml deploys) on an amd64 machine. The tests run qemu
# explicitly as the bootstrap's launcher: no Docker, no binfmt_misc registration, no root needed
# once installed.
#
#   qemu.sh install   download the pinned qemu-user-static and extract qemu-aarch64-static (idempotent)
#   qemu.sh path      print the binary's path (installing first if needed); logs go to stderr
#   qemu.sh version   print the installed binary's version line
#
# Needs: apt-get, dpkg-deb, tar (a Debian or Ubuntu machine). Reaches only the machine's apt mirrors.
# The package is fetched with `apt-get download`, which checks it against the signed apt indexes.
#
# Environment:
#   SKEIN_QEMU_CACHE       cache directory (default ~/.cache/skein-qemu)
#   SKEIN_QEMU_APT_UPDATE  0: never run `apt-get update`; by default, as root, it is run once when the
#                          apt indexes do not know the package (a fresh container) or a download fails
set -euo pipefail
shopt -s inherit_errexit # `dir=$(install)` stops at the first failure too

# ---- pinned version ----------------------------------------------------------------------------
# Debian 12's qemu-user-static. Debian mirrors keep only the current point release of a package
# (plus the security archive's), so once this one is superseded `install` falls back to the apt
# candidate with a warning; then update the pin.
PACKAGE=qemu-user-static
QEMU_VERSION='1:7.2+dfsg-7+deb12u18+b3'
BINARY=qemu-aarch64-static

# ---- settings ----------------------------------------------------------------------------------
CACHE_DIR=${SKEIN_QEMU_CACHE:-$HOME/.cache/skein-qemu}
APT_UPDATE=${SKEIN_QEMU_APT_UPDATE:-1}

log() { printf 'qemu: %s\n' "$*" >&2; }
warn() { printf 'qemu: WARNING: %s\n' "$*" >&2; }
die() { printf 'qemu: ERROR: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not on PATH${2:+ ($2)}"; }

# dir_of VERSION: where that version is installed (named like the .deb, ':' as %3a).
dir_of() { echo "$CACHE_DIR/${PACKAGE}_${1//:/%3a}"; }
complete() { [[ -f "$1/.complete" && -x "$1/bin/$BINARY" ]]; }

# candidate: the version apt would install now ("" if the indexes do not know the package).
candidate() {
  local c
  c=$(apt-cache policy "$PACKAGE" 2>/dev/null | awk '/Candidate:/ { print $2; exit }') || true
  [[ "$c" == "(none)" ]] && c=
  echo "$c"
}

# known VERSION: the apt indexes list that version of the package.
known() { apt-cache madison "$PACKAGE" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | grep -qxF -- "$1"; }

UPDATED=0
# apt_update: refresh the apt indexes once, when allowed (root, SKEIN_QEMU_APT_UPDATE != 0).
apt_update() {
  ((UPDATED == 0)) || return 1
  UPDATED=1
  [[ "$APT_UPDATE" != 0 && $(id -u) == 0 ]] || return 1
  log "refreshing the apt indexes (apt-get update; SKEIN_QEMU_APT_UPDATE=0 to prevent)"
  apt-get update -qq >/dev/null 2>&1 || { warn "apt-get update failed"; return 1; }
}

# fetch VERSION: download that version's .deb and install its qemu-aarch64-static into dir_of VERSION.
fetch() {
  local ver=$1 dest tmp deb got out
  dest=$(dir_of "$ver")
  complete "$dest" && return 0
  tmp=$dest.tmp.$$
  rm -rf "$tmp"
  # (called as `if fetch`, where errexit is off: every step checks its own failure)
  mkdir -p "$tmp/deb" "$tmp/root" || die "cannot create $tmp"
  # apt-get download writes into the current directory; its log is shown only on failure
  if ! (cd "$tmp/deb" && apt-get download -q "$PACKAGE=$ver") >"$tmp/apt.log" 2>&1; then
    log "could not download $PACKAGE $ver: $(grep -E '^(E|Err):' "$tmp/apt.log" | head -n 2 | tr '\n' ' ')"
    rm -rf "$tmp"
    return 1
  fi
  deb=$(find "$tmp/deb" -maxdepth 1 -name '*.deb' -print -quit)
  [[ -n "$deb" ]] || { rm -rf "$tmp"; die "apt-get download $PACKAGE=$ver produced no .deb"; }
  got=$(dpkg-deb -f "$deb" Package Version | awk -F': ' '{ printf "%s ", $2 }')
  [[ "$got" == "$PACKAGE $ver " ]] || { rm -rf "$tmp"; die "downloaded .deb is '$got', expected $PACKAGE $ver"; }
  # only the one binary (13 MB) and its licence; the package holds every target (~60 MB packed)
  if ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/root" "./usr/bin/$BINARY" \
    "./usr/share/doc/$PACKAGE/copyright" 2>"$tmp/tar.log"; then
    cat "$tmp/tar.log" >&2
    rm -rf "$tmp"
    die "$PACKAGE $ver has no usr/bin/$BINARY"
  fi
  if ! { mkdir -p "$tmp/bin" && mv "$tmp/root/usr/bin/$BINARY" "$tmp/bin/$BINARY" &&
    mv "$tmp/root/usr/share/doc/$PACKAGE/copyright" "$tmp/copyright"; }; then
    rm -rf "$tmp"
    die "cannot fill $tmp"
  fi
  out=$("$tmp/bin/$BINARY" --version 2>&1 | head -n 1) || true
  [[ "$out" == "qemu-aarch64 version "* ]] || { rm -rf "$tmp"; die "$BINARY from $PACKAGE $ver does not run: $out"; }
  rm -rf "$tmp/deb" "$tmp/root" "$tmp/apt.log" "$tmp/tar.log"
  if ! { printf '%s %s\n%s\n' "$PACKAGE" "$ver" "$out" >"$tmp/.complete" && rm -rf "$dest" && mv "$tmp" "$dest"; }; then
    die "cannot install into $dest"
  fi
  log "installed $BINARY from $PACKAGE $ver ($out) in $dest"
}

# fallback_notice VERSION: the warning printed whenever a version other than the pin is used.
fallback_notice() {
  warn "the pinned $PACKAGE $QEMU_VERSION cannot be downloaded (Debian mirrors drop superseded point" \
    "releases); using the current candidate $1 instead; update QEMU_VERSION in scripts/qemu.sh"
}

# installed: print the directory of a usable install without touching the network: the pinned
# version, or else the current apt candidate if it was installed as a fallback earlier.
installed() {
  local d c
  d=$(dir_of "$QEMU_VERSION")
  if complete "$d"; then echo "$d"; return 0; fi
  command -v apt-cache >/dev/null 2>&1 || return 1
  c=$(candidate)
  [[ -n "$c" ]] || return 1
  d=$(dir_of "$c")
  complete "$d" || return 1
  fallback_notice "$c"
  echo "$d"
}

# install: print the directory of a usable install, downloading the pin (or the fallback) if needed.
install() {
  installed && return 0
  need apt-get "a Debian or Ubuntu machine; elsewhere install qemu-user-static and set SKEIN_QEMU_AARCH64"
  need apt-cache
  need dpkg-deb
  need tar
  mkdir -p "$CACHE_DIR" || die "cannot create the cache directory $CACHE_DIR (SKEIN_QEMU_CACHE)"
  (
    # two sessions installing at once share one download instead of racing
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$CACHE_DIR/.install.lock"
      flock 9
    fi
    installed && exit 0
    local c attempt
    known "$QEMU_VERSION" || apt_update || true
    for attempt in 1 2; do
      if fetch "$QEMU_VERSION"; then dir_of "$QEMU_VERSION"; exit 0; fi
      c=$(candidate)
      if [[ -n "$c" && "$c" != "$QEMU_VERSION" ]]; then
        fallback_notice "$c"
        if fetch "$c"; then dir_of "$c"; exit 0; fi
      fi
      # once more after refreshing the indexes, if that is allowed and was not done yet
      if ((attempt == 2)) || ! apt_update; then break; fi
    done
    [[ "${c:-}" != "$QEMU_VERSION" ]] || c=
    die "could not download $PACKAGE $QEMU_VERSION${c:+ nor the candidate $c}" \
      "(try: apt-get update; then rerun $0 install)"
  )
}

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

case ${1:-} in
  install)
    dir=$(install)
    log "$BINARY from $(sed -n 1p "$dir/.complete"): $dir/bin/$BINARY"
    ;;
  path)
    dir=$(install)
    echo "$dir/bin/$BINARY"
    ;;
  version)
    dir=$(installed) || die "not installed; run: $0 install"
    sed -n 2p "$dir/.complete"
    ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
