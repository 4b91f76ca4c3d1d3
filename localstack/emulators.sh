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
# Needs: java (17+), mvn (3.6.3+), python3 (3.9+), curl. Reaches only Maven Central and PyPI.
# See localstack/README.md for ports, directories and environment variables.
set -euo pipefail

# ---- pinned versions ---------------------------------------------------------------------------
# DynamoDB Local: 3.3.1 is the newest release on Maven Central (3.3.2 is not published there).
DDB_GROUP=software.amazon.dynamodb
DDB_ARTIFACT=DynamoDBLocal
DDB_VERSION=3.3.1
DDB_MAIN=software.amazon.dynamodb.services.local.main.ServerRunner
# sqlite4java native library: its version is whatever DDB_VERSION depends on (1.0.392 for 3.3.1);
# it is resolved from DynamoDBLocal's own pom, and checked against the sqlite4java jar.
SQLITE4JAVA_NATIVE=libsqlite4java-linux-amd64
ELASTICMQ_GROUP=org.elasticmq
ELASTICMQ_ARTIFACT=elasticmq-server_2.13
ELASTICMQ_VERSION=1.7.1
ELASTICMQ_MAIN=org.elasticmq.server.Main
MOTO_VERSION=5.2.5
MAVEN_DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

# ---- settings ----------------------------------------------------------------------------------
CACHE_DIR=${SKEIN_EMU_CACHE:-$HOME/.cache/skein-emulators}
STATE_DIR=${SKEIN_EMU_STATE:-$PWD/.emulators}
READY_TIMEOUT=${SKEIN_EMU_TIMEOUT:-60}           # seconds to wait for each service to answer
JAVA_OPTS=${SKEIN_EMU_JAVA_OPTS:-}                # extra JVM flags for DynamoDB Local and ElasticMQ
HOST=127.0.0.1
DEFAULT_PORT_dynamodb=8000
DEFAULT_PORT_sqs=9324
DEFAULT_PORT_s3=5000
PORT_ENV_dynamodb=SKEIN_EMU_DYNAMODB_PORT
PORT_ENV_sqs=SKEIN_EMU_SQS_PORT
PORT_ENV_s3=SKEIN_EMU_S3_PORT
SERVICES=(dynamodb sqs s3)

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA=${JAVA:-$JAVA_HOME/bin/java}; else JAVA=${JAVA:-java}; fi
MVN=${MVN:-mvn}
PYTHON=${PYTHON:-python3}

DDB_DIR=$CACHE_DIR/dynamodb-local-$DDB_VERSION
ELASTICMQ_DIR=$CACHE_DIR/elasticmq-$ELASTICMQ_VERSION
MOTO_DIR=$CACHE_DIR/moto-$MOTO_VERSION

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
  [[ $(uname -s)/$(uname -m) == Linux/x86_64 ]] ||
    log "warning: only the linux-amd64 sqlite4java native library is installed; DynamoDB Local may not start here"
  log "installing $(label dynamodb) into $DDB_DIR"
  local tmp=$DDB_DIR.tmp.$$
  rm -rf "$tmp"
  maven_copy "$tmp" "$DDB_GROUP" "$DDB_ARTIFACT" "$DDB_VERSION"
  local so jar sover jarver
  so=$(find "$tmp/lib" -maxdepth 1 -name "$SQLITE4JAVA_NATIVE-*.so" | head -n 1)
  jar=$(find "$tmp/lib" -maxdepth 1 -name 'sqlite4java-*.jar' | head -n 1)
  [[ -n "$so" && -n "$jar" ]] || die "DynamoDBLocal $DDB_VERSION did not bring sqlite4java and $SQLITE4JAVA_NATIVE"
  sover=${so##*/$SQLITE4JAVA_NATIVE-}; sover=${sover%.so}
  jarver=${jar##*/sqlite4java-}; jarver=${jarver%.jar}
  [[ "$sover" == "$jarver" ]] || die "sqlite4java $jarver but $SQLITE4JAVA_NATIVE $sover"
  mkdir -p "$tmp/native"
  mv "$so" "$tmp/native/$SQLITE4JAVA_NATIVE.so"
  # the other platforms' natives (win32 .dll, osx .dylib, linux-i386 .so) are not needed
  find "$tmp/lib" -maxdepth 1 \( -name '*.so' -o -name '*.dll' -o -name '*.dylib' \) -delete
  echo "$DDB_GROUP:$DDB_ARTIFACT:$DDB_VERSION sqlite4java:$jarver" >"$tmp/.complete"
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
  need "$PYTHON" "Python 3.9+"
  mkdir -p "$CACHE_DIR"
  # A subshell holds the lock so that its descriptor is closed before any emulator starts;
  # two sessions installing at once then share one download instead of racing.
  (
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$CACHE_DIR/.install.lock"
      flock 9
    fi
    install_dynamodb
    install_elasticmq
    install_moto
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
    dynamodb) echo "$DDB_MAIN" ;;
    sqs) echo "$ELASTICMQ_MAIN" ;;
    s3) echo "moto_server" ;;
  esac
}

# pid_of SERVICE: print the PID from the pid file if that process is alive and is ours.
pid_of() {
  local f pid cmd
  f=$(pidfile "$1")
  [[ -f "$f" ]] || return 1
  pid=$(<"$f")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  cmd=$(ps -o args= -p "$pid" 2>/dev/null) || return 1
  [[ "$cmd" == *"$(marker "$1")"* ]] || return 1
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

TAKEN=" "
# choose_port SERVICE [AFTER]: the port from the environment (must be free), else the default,
# else the next free port above it.
choose_port() {
  local svc=$1 after=${2:-} envvar defvar p
  envvar=PORT_ENV_$svc; defvar=DEFAULT_PORT_$svc
  if [[ -n "${!envvar:-}" ]]; then
    p=${!envvar}
    [[ -z "$after" ]] || die "$(label "$svc") could not bind ${!envvar}=$p (see $(logfile "$svc"))"
    port_free "$p" || die "${!envvar}=$p is already in use"
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
      nohup "$JAVA" $JAVA_OPTS -Djava.library.path="$DDB_DIR/native" -cp "$DDB_DIR/lib/*" "$DDB_MAIN" \
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

stop_one() {
  local svc=$1 pid i
  if pid=$(pid_of "$svc"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      log "$svc: pid $pid ignored TERM; killed"
    fi
    # a child of this shell lingers as a zombie until reaped; the pid file is what matters
    log "$svc: stopped (pid $pid)"
  fi
  rm -f "$(pidfile "$svc")" "$(portfile "$svc")"
}

# ---- commands ----------------------------------------------------------------------------------
cmd_start() {
  cmd_install
  need curl
  mkdir -p "$STATE_DIR"
  local svc pid port pending=() t0 now
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

  local -A tries=() started=()
  for svc in "${pending[@]}"; do
    port=$(choose_port "$svc")
    TAKEN+="$port "
    launch "$svc" "$port"
    tries[$svc]=1
    started[$svc]=$(date +%s)
  done

  # Poll until every pending service answers. A service on an automatically chosen port that
  # dies early (another session took the port meanwhile) is relaunched on the next free port.
  local remaining=("${pending[@]}") still
  while ((${#remaining[@]} > 0)); do
    still=()
    now=$(date +%s)
    for svc in "${remaining[@]}"; do
      port=$(port_of "$svc")
      pid=$(pid_of "$svc") || pid=
      if [[ -z "$pid" ]] || bind_failed "$svc"; then
        local envvar=PORT_ENV_$svc
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
        stop_one "$svc" 2>/dev/null
        exit 1
      fi
      if answers "$port" && owns_port "$pid" "$port"; then
        log "$svc: ready in $((now - ${started[$svc]}))s ($(label "$svc"), pid $pid, http://$HOST:$port)"
        continue
      fi
      if ((now - ${started[$svc]} >= READY_TIMEOUT)); then
        printf 'emulators: ERROR: %s (%s) did not answer on %s:%s within %ss; last lines of %s:\n' \
          "$svc" "$(label "$svc")" "$HOST" "$port" "$READY_TIMEOUT" "$(logfile "$svc")" >&2
        tail -n 30 "$(logfile "$svc")" >&2 || true
        stop_one "$svc" 2>/dev/null
        exit 1
      fi
      still+=("$svc")
    done
    remaining=("${still[@]+"${still[@]}"}")
    ((${#remaining[@]} == 0)) || sleep 0.25
  done
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
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=skeintest
export AWS_SECRET_ACCESS_KEY=skeintest
export SKEIN_EMULATORS=1
export SKEIN_S3_PATH_STYLE=1
EOF
}

cmd_stop() {
  local svc
  for svc in "${SERVICES[@]}"; do stop_one "$svc"; done
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
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
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
