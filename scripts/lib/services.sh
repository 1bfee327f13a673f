# shellcheck shell=bash
# Throwaway PostgreSQL and Redis for hookd's scripts (test, run, bench).
#
# Source this file, then call `services_start [durable]`. It finds (or installs
# with apt-get) the server binaries, starts both servers on free loopback ports
# in a private directory, exports DATABASE_URL / REDIS_URL and the binary paths
# the tests use to run servers of their own, makes a throwaway CA and a server
# certificate for 127.0.0.1/localhost (HOOKD_TEST_CA_FILE, HOOKD_TEST_TLS_CERT,
# HOOKD_TEST_TLS_KEY) for tests that start TLS servers, and registers
# `services_stop` on EXIT so nothing outlives the script, even when it fails.

SERVICES_DIR=""
PG_DATA=""
PG_REPLICA_DATA=""
REDIS_PIDFILE=""
WEBDRIVER_PID=""
CLUSTER_DIRS=""

log() { printf '[hookd] %s\n' "$*" >&2; }

# Runs a command as the `postgres` user when we are root (postgres refuses to
# run as root), as ourselves otherwise.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "missing $*; install it (apt-get install -y $*) or run as root"
    exit 1
  fi
  log "installing $* with apt-get"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
  fi
}

# python_venv DIR PACKAGE==VERSION...: a venv at DIR holding exactly those
# pinned packages (made, or completed, when one is missing; Debian's python3
# needs python3-venv for it). The tests' Python tools live in target/.
python_venv() {
  local dir=$1 installed package missing=0
  shift
  installed=$("$dir/bin/pip" freeze 2>/dev/null || true)
  for package in "$@"; do
    grep -qxi -- "$package" <<<"$installed" || missing=1
  done
  [ "$missing" = 0 ] && return
  mkdir -p "$(dirname "$dir")"
  if ! python3 -m venv "$dir" >/dev/null 2>&1; then
    apt_install python3-venv
    python3 -m venv "$dir"
  fi
  "$dir/bin/pip" install -q --disable-pip-version-check "$@"
}

find_pg_bindir() {
  local d
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null && command -v postgres >/dev/null; then
    # Where the binaries really are (a pg_ctl on PATH may be a link), so
    # that their siblings (pg_basebackup for the replica tests) are found.
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  return 0
}

find_redis_server() {
  if command -v redis-server; then return; fi
  if [ -x /usr/bin/redis-server ]; then echo /usr/bin/redis-server; fi
  return 0
}

# Prints a TCP port on 127.0.0.1 that nothing listens on right now, below
# the kernel's ephemeral range: a port in that range can be the local end
# of an outgoing connection (hookd's to PostgreSQL, say), which nothing
# listens on but a bind still refuses (the README check's receiver failed
# so once, "Address already in use").
free_port() {
  local p low=10000 high
  high=$(awk '{ print $1 - 1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  if ! [ "${high:-0}" -gt $((low + 1000)) ] 2>/dev/null; then high=32767; fi
  for _ in $(seq 1 200); do
    p=$(( (RANDOM % (high - low + 1)) + low ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  log "no free port found"; exit 1
}

services_stop() {
  set +e
  if [ -n "$WEBDRIVER_PID" ]; then
    # The whole group: chromedriver and any browser a failed test left open.
    kill -- -"$WEBDRIVER_PID" 2>/dev/null
    wait "$WEBDRIVER_PID" 2>/dev/null
  fi
  if [ -n "$REDIS_PIDFILE" ] && [ -f "$REDIS_PIDFILE" ]; then
    kill "$(cat "$REDIS_PIDFILE")" 2>/dev/null
  fi
  local dir pidfile
  for dir in $CLUSTER_DIRS; do
    for pidfile in "$dir"/*.pid; do
      [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
    done
  done
  if [ -n "$PG_REPLICA_DATA" ] && [ -f "$PG_REPLICA_DATA/postmaster.pid" ]; then
    as_pg "$PG_BINDIR/pg_ctl" -D "$PG_REPLICA_DATA" -m immediate -w stop >/dev/null 2>&1
  fi
  if [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    as_pg "$PG_BINDIR/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1
  fi
  if [ -n "$SERVICES_DIR" ] && [ -z "${HOOKD_KEEP_SERVICES_DIR:-}" ]; then
    rm -rf "$SERVICES_DIR"
  fi
}

# make_test_certificates DIR: a CA valid for two days and a server certificate
# it signed for localhost and 127.0.0.1, all in DIR. The keys are readable by
# anyone on purpose: they protect nothing but a test run.
make_test_certificates() {
  local dir="$1"
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=hookd test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    >/dev/null 2>&1 || { log "openssl could not make the test CA"; exit 1; }
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=localhost" >/dev/null 2>&1
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >"$dir/server.ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/server.pem" -days 2 -extfile "$dir/server.ext" >/dev/null 2>&1 \
    || { log "openssl could not make the test server certificate"; exit 1; }
  chmod 644 "$dir"/*.key "$dir"/*.pem
}

# services_start [durable]
# Without "durable", Postgres runs with fsync off: tests want speed, not crash
# safety of a throwaway cluster. The benchmark passes "durable" so that its
# figures are for commits that really reach the disk.
services_start() {
  local mode="${1:-fast}"
  PG_BINDIR=$(find_pg_bindir)
  if [ -z "$PG_BINDIR" ]; then apt_install postgresql; PG_BINDIR=$(find_pg_bindir); fi
  REDIS_SERVER=$(find_redis_server)
  if [ -z "$REDIS_SERVER" ]; then apt_install redis-server; REDIS_SERVER=$(find_redis_server); fi
  [ -n "$PG_BINDIR" ] && [ -n "$REDIS_SERVER" ] || { log "could not find PostgreSQL or redis-server"; exit 1; }

  SERVICES_DIR=$(mktemp -d /tmp/hookd-services.XXXXXX)
  chmod 755 "$SERVICES_DIR"
  trap services_stop EXIT
  trap 'exit 130' INT TERM

  PG_DATA="$SERVICES_DIR/pg"
  mkdir -p "$PG_DATA"
  [ "$(id -u)" = 0 ] && chown postgres: "$PG_DATA"
  as_pg "$PG_BINDIR/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$SERVICES_DIR/initdb.log" 2>&1 \
    || { cat "$SERVICES_DIR/initdb.log" >&2; exit 1; }
  local pg_opts="-c listen_addresses=127.0.0.1 -k $PG_DATA -c max_connections=400 -c shared_buffers=256MB"
  if [ "$mode" != durable ]; then
    pg_opts="$pg_opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  # Settings a caller adds (scripts/bench's BENCH_PG_STATS and BENCH_PG_EXPLAIN).
  pg_opts="$pg_opts ${SERVICES_PG_OPTS:-}"
  local attempt
  for attempt in 1 2 3; do
    PG_PORT=$(free_port)
    if as_pg "$PG_BINDIR/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 30 \
         -o "-p $PG_PORT $pg_opts" start >/dev/null 2>&1; then
      break
    fi
    [ "$attempt" = 3 ] && { tail -20 "$PG_DATA/server.log" >&2; log "postgres did not start"; exit 1; }
  done

  REDIS_PIDFILE="$SERVICES_DIR/redis.pid"
  for attempt in 1 2 3; do
    REDIS_PORT=$(free_port)
    "$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
      --daemonize yes --pidfile "$REDIS_PIDFILE" --logfile "$SERVICES_DIR/redis.log" \
      --dir "$SERVICES_DIR" >/dev/null 2>&1
    for _ in $(seq 1 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT") 2>/dev/null && break 2
      sleep 0.05
    done
    [ "$attempt" = 3 ] && { tail -20 "$SERVICES_DIR/redis.log" >&2; log "redis did not start"; exit 1; }
  done

  export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
  export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  # Tests that stop, restart or flush a store start servers of their own with these.
  export HOOKD_TEST_PG_BINDIR="$PG_BINDIR"
  export HOOKD_TEST_REDIS_SERVER="$REDIS_SERVER"
  export SERVICES_DIR
  make_test_certificates "$SERVICES_DIR/tls"
  export HOOKD_TEST_CA_FILE="$SERVICES_DIR/tls/ca.pem"
  export HOOKD_TEST_TLS_CERT="$SERVICES_DIR/tls/server.pem"
  export HOOKD_TEST_TLS_KEY="$SERVICES_DIR/tls/server.key"
  log "postgres on 127.0.0.1:$PG_PORT, redis on 127.0.0.1:$REDIS_PORT ($SERVICES_DIR)"
}

# pg_replica_start (after services_start): a streaming replica of the test
# PostgreSQL, made as an operator makes one (`pg_basebackup -R` through a
# replication slot, then a second postgres on a free port), for the
# conformance suite's read-replica backend (tests/it/conformance/replica.rs).
# It is the primary's synchronous standby, but only for sessions that ask
# (`synchronous_commit = remote_apply`, whose commits return once the
# replica shows them): every other session keeps the primary's
# `synchronous_commit = off`. Exports
# HOOKD_TEST_REPLICA_URL; services_stop stops it.
pg_replica_start() {
  local data="$SERVICES_DIR/pg-replica" port attempt
  mkdir -p "$data"
  chmod 700 "$data"
  [ "$(id -u)" = 0 ] && chown postgres: "$data"
  # Through a replication slot (-C -S; -R names it in the replica's
  # settings): the primary keeps its WAL until the replica has it. Without
  # one, a replica that fell behind under the suite's load once asked for
  # a segment the primary had already recycled, never caught up, and every
  # remote_apply commit waited for it forever.
  as_pg "$PG_BINDIR/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U postgres -R -C -S hookd_test_replica \
    -X stream --no-sync -D "$data" >"$SERVICES_DIR/basebackup.log" 2>&1 \
    || { cat "$SERVICES_DIR/basebackup.log" >&2; log "pg_basebackup failed"; exit 1; }
  PG_REPLICA_DATA="$data"
  # A hot standby needs at least the primary's max_connections.
  for attempt in 1 2 3; do
    port=$(free_port)
    if as_pg "$PG_BINDIR/pg_ctl" -D "$data" -l "$data/server.log" -w -t 30 \
         -o "-p $port -c listen_addresses=127.0.0.1 -k $data -c max_connections=400 -c fsync=off" \
         start >/dev/null 2>&1; then
      break
    fi
    [ "$attempt" = 3 ] && { tail -20 "$data/server.log" >&2; log "the replica did not start"; exit 1; }
  done
  as_pg "$PG_BINDIR/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
    -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null \
    || { log "could not make the replica a synchronous standby"; exit 1; }
  export HOOKD_TEST_REPLICA_URL="postgres://postgres@127.0.0.1:$port/postgres"
  log "postgres replica on 127.0.0.1:$port"
}

# webdriver_start (after services_start): the console's browser tests drive
# Debian's headless Chromium through chromedriver. Installs chromium and
# chromium-driver when missing, starts chromedriver on a free loopback port
# and exports HOOKD_WEBDRIVER_URL; services_stop stops it and any browser a
# failed test left open. Installs curl too, which a browser test runs.
webdriver_start() {
  local driver chromium port
  driver=$(command -v chromedriver || true)
  chromium=$(command -v chromium || true)
  if [ -z "$driver" ] || [ -z "$chromium" ]; then
    apt_install chromium chromium-driver
    driver=$(command -v chromedriver || true)
    chromium=$(command -v chromium || true)
  fi
  [ -n "$driver" ] && [ -n "$chromium" ] || { log "could not find chromedriver or chromium"; exit 1; }
  # The console's "copy as curl" is run as copied (tests/it/console).
  command -v curl >/dev/null || apt_install curl
  for _ in 1 2 3; do
    port=$(free_port)
    # A process group of its own (setsid), so services_stop ends the
    # browsers it started with it.
    setsid "$driver" --port="$port" --allowed-ips=127.0.0.1 --log-path="$SERVICES_DIR/chromedriver.log" >/dev/null 2>&1 &
    WEBDRIVER_PID=$!
    for _ in $(seq 1 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        export HOOKD_WEBDRIVER_URL="http://127.0.0.1:$port"
        export HOOKD_CHROMIUM="$chromium"
        log "chromedriver on 127.0.0.1:$port ($chromium)"
        return
      fi
      kill -0 "$WEBDRIVER_PID" 2>/dev/null || break
      sleep 0.05
    done
    kill -- -"$WEBDRIVER_PID" 2>/dev/null
    WEBDRIVER_PID=""
  done
  tail -20 "$SERVICES_DIR/chromedriver.log" >&2
  log "chromedriver did not start"
  exit 1
}

# cluster_node_start DIR: one cluster-enabled redis-server on a free port
# whose bus port (port + 10000) is free too; prints the port once it answers.
cluster_node_start() {
  local dir="$1" port
  for _ in 1 2 3 4 5; do
    port=$(( (RANDOM % 20000) + 20000 ))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
       || (exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
      continue
    fi
    mkdir -p "$dir/$port"
    "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --cluster-enabled yes --cluster-node-timeout 1000 --cluster-require-full-coverage no \
      --cluster-config-file "$dir/$port/nodes.conf" \
      --daemonize yes --pidfile "$dir/$port.pid" --logfile "$dir/$port/redis.log" \
      --dir "$dir/$port" >/dev/null 2>&1 || continue
    # --daemonize hides a failed bind, and another Redis may have taken
    # the port meanwhile: the server answering must be the one started
    # here, whose dir is this node's.
    local mine answer
    mine=$(cd "$dir/$port" && pwd -P)
    for _ in $(seq 1 100); do
      answer=$("$REDIS_CLI" -p "$port" config get dir 2>/dev/null || true)
      if [ "$(printf '%s\n' "$answer" | sed -n 2p)" = "$mine" ]; then echo "$port"; return; fi
      # Someone else answers on this port: ours failed to bind.
      [ -n "$answer" ] && break
      sleep 0.05
    done
    [ -f "$dir/$port.pid" ] && kill "$(cat "$dir/$port.pid")" 2>/dev/null
  done
  log "no cluster node of redis-server started (see $dir/*/redis.log)"
  exit 1
}

# redis_cluster_start (after services_start): a Redis Cluster of 3 masters
# and 3 replicas (`--cluster-replicas 1`) on free loopback ports, failing
# over within a second or two (`cluster-node-timeout 1000`). Exports
# HOOKD_TEST_REDIS_CLUSTER (the nodes' URLs, comma-separated),
# HOOKD_TEST_REDIS_CLUSTER_DIR (where each node keeps `<port>.pid`) and
# HOOKD_TEST_REDIS_CLI; services_stop stops the nodes.
redis_cluster_start() {
  local dir="$SERVICES_DIR/cluster" ports=() port urls="" nodes=""
  REDIS_CLI=$(command -v redis-cli || true)
  [ -n "$REDIS_CLI" ] || { apt_install redis-tools; REDIS_CLI=$(command -v redis-cli); }
  mkdir -p "$dir"
  CLUSTER_DIRS="$CLUSTER_DIRS $dir"
  for _ in 1 2 3 4 5 6; do
    port=$(cluster_node_start "$dir") || exit 1
    ports+=("$port")
    nodes="$nodes 127.0.0.1:$port"
    urls="${urls:+$urls,}redis://127.0.0.1:$port"
  done
  # shellcheck disable=SC2086
  "$REDIS_CLI" --cluster create $nodes --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 \
    || { cat "$dir/create.log" >&2; log "redis-cli --cluster create failed"; exit 1; }
  for port in "${ports[@]}"; do
    local ok=""
    for _ in $(seq 1 200); do
      if "$REDIS_CLI" -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
        ok=1
        break
      fi
      sleep 0.05
    done
    if [ -z "$ok" ]; then
      "$REDIS_CLI" -p "$port" cluster info >&2 2>&1 || true
      log "the redis cluster node on 127.0.0.1:$port is not cluster_state:ok after 10 s (see $dir/$port/redis.log)"
      exit 1
    fi
  done
  export HOOKD_TEST_REDIS_CLUSTER="$urls"
  export HOOKD_TEST_REDIS_CLUSTER_DIR="$dir"
  export HOOKD_TEST_REDIS_CLI="$REDIS_CLI"
  log "redis cluster on 127.0.0.1:${ports[*]}"
}
