#!/usr/bin/env bash
# Runs a 3-node MariaDB Galera cluster on localhost for the storage tests:
# separate mariadbd processes on 127.0.0.1:3311, 3312 and 3313 (root, no
# password, database `test`), with their data under
# ${PANORAMA_CACHE:-~/.cache/panorama}/galera, or /var/lib/panorama-galera
# as root. It never touches the machine's own MariaDB.
#
#   hack/galera.sh start        start what is not running (idempotent)
#   hack/galera.sh stop         stop every node
#   hack/galera.sh kill N       kill -9 node N (1..3), as a crash
#   hack/galera.sh start-node N start node N, joining the others
#   hack/galera.sh status       print each node's wsrep state
#
# The first start bootstraps node 1 and has the others join it by state
# transfer (rsync); later starts restart stopped nodes, which catch up
# from the others' write-set cache, or bootstrap again from the most
# advanced node when none runs.
set -euo pipefail

# Galera's state transfers (even the incremental ones signal completion
# through rsync) run an rsync daemon as the server's user; started by root
# it would drop to nobody, who cannot write into a home that is root's
# alone. So root runs the nodes as mysql, with their data outside home.
if [ "$(id -u)" = 0 ]; then
  dir=${PANORAMA_GALERA_DIR:-/var/lib/panorama-galera}
  user=mysql
else
  dir=${PANORAMA_GALERA_DIR:-${PANORAMA_CACHE:-$HOME/.cache/panorama}/galera}
  user=$(id -un)
fi
nodes=(1 2 3)
provider=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}

log() { echo "galera: $*" >&2; }

port() { echo $((3310 + $1)); }           # client port
gport() { echo $((4557 + 10 * $1)); }     # group communication; IST is gport+1
sstport() { echo $((4434 + 10 * $1)); }   # state transfer receive

sql() { # node statement
  mariadb --protocol=socket -S "$dir/node$1/mysqld.sock" -uroot -N -B -e "$2"
}

running() { [ -S "$dir/node$1/mysqld.sock" ] && sql "$1" 'SELECT 1' >/dev/null 2>&1; }

state() { sql "$1" "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | awk '{print $2}'; }

wait_synced() { # node seconds
  local i
  for i in $(seq $(($2 * 5))); do
    [ "$(state "$1")" = Synced ] && return 0
    if ! pid_alive "$1"; then log "node $1 exited; see $dir/node$1.err"; tail -20 "$dir/node$1.err" >&2; return 1; fi
    sleep 0.2
  done
  log "node $1 not synced after $2s; see $dir/node$1.err"
  return 1
}

pid_alive() { [ -f "$dir/node$1.pid" ] && kill -0 "$(cat "$dir/node$1.pid")" 2>/dev/null; }

config() { # node
  local n=$1 peers="" m
  for m in "${nodes[@]}"; do peers+="${peers:+,}127.0.0.1:$(gport "$m")"; done
  cat >"$dir/node$n.cnf" <<EOF
[mariadbd]
datadir=$dir/node$n
socket=$dir/node$n/mysqld.sock
pid-file=$dir/node$n/mariadbd.pid
log-error=$dir/node$n.err
port=$(port "$n")
bind-address=127.0.0.1
skip-name-resolve
user=$user
character-set-server=utf8mb4
collation-server=utf8mb4_bin
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
# Test sizes; durability comes from the other nodes.
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=0
max_allowed_packet=64M
max_connections=200
performance_schema=OFF
wsrep_on=ON
wsrep_provider=$provider
wsrep_cluster_name=panorama-test
wsrep_cluster_address=gcomm://$peers
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:$(gport "$n")
wsrep_node_incoming_address=127.0.0.1:$(port "$n")
# Tests kill nodes: the others notice within seconds, not the default 15.
wsrep_provider_options=base_host=127.0.0.1;base_port=$(gport "$n");ist.recv_addr=127.0.0.1:$(($(gport "$n") + 1));gcache.size=128M;pc.wait_prim_timeout=PT10S;evs.keepalive_period=PT1S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S;pc.recovery=false
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$(sstport "$n")
wsrep_slave_threads=2
EOF
}

launch() { # node [extra mariadbd args...]
  local n=$1
  shift
  config "$n"
  mkdir -p "$dir/node$n"
  chown "$user" "$dir/node$n"
  # setsid: the node outlives the shell (and a test) that started it.
  setsid mariadbd --defaults-file="$dir/node$n.cnf" "$@" </dev/null >>"$dir/node$n.err" 2>&1 &
  echo $! >"$dir/node$n.pid"
}

# seqno of a stopped node's last commit, from its saved state (-1 unknown).
saved_seqno() {
  local f="$dir/node$1/grastate.dat"
  [ -f "$f" ] && awk '/^seqno:/ {print $2}' "$f" || echo -1
}

# init creates node 1's data, with the test user and database, and copies
# it to the others once node 1 has stopped: they start at the same
# position and join by an incremental transfer, not a full copy.
init() {
  log "initializing the nodes' data"
  rm -rf "$dir"/node*
  mkdir -p "$dir/node1"
  chown "$user" "$dir" "$dir/node1"
  config 1
  mariadb-install-db --defaults-file="$dir/node1.cnf" --auth-root-authentication-method=socket \
    --skip-test-db >"$dir/node1.install.log" 2>&1 || { cat "$dir/node1.install.log" >&2; exit 1; }
  launch 1 --wsrep-new-cluster
  wait_synced 1 60
  sql 1 "CREATE USER IF NOT EXISTS root@'127.0.0.1'; GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION; CREATE DATABASE test"
  stop_node 1
  local n
  for n in 2 3; do
    cp -a "$dir/node1" "$dir/node$n"
    sed -i 's/^safe_to_bootstrap: 1/safe_to_bootstrap: 0/' "$dir/node$n/grastate.dat"
  done
}

bootstrap() { # node
  local n=$1
  # After a crash of the whole cluster no node is marked safe: this script
  # picks the most advanced one itself.
  sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$dir/node$n/grastate.dat"
  log "bootstrapping the cluster on node $n"
  launch "$n" --wsrep-new-cluster
  wait_synced "$n" 60
}

start_node() { # node
  local n=$1
  if running "$n"; then return 0; fi
  log "starting node $n"
  rm -f "$dir/node$n/mysqld.sock"
  launch "$n"
  wait_synced "$n" 120
}

start() {
  mkdir -p "$dir"
  local n any=""
  for n in "${nodes[@]}"; do running "$n" && any=$n; done
  if [ -z "$any" ]; then
    [ -f "$dir/node3/grastate.dat" ] || init
    local best=1 seq
    for n in "${nodes[@]}"; do
      seq=$(saved_seqno "$n")
      [ "$seq" -gt "$(saved_seqno "$best")" ] && best=$n
    done
    bootstrap "$best"
  fi
  # One joiner at a time: a donor serves one state transfer.
  for n in "${nodes[@]}"; do start_node "$n"; done
  log "cluster up: $(sql 1 "SHOW STATUS LIKE 'wsrep_cluster_size'" | awk '{print $2}') nodes on 127.0.0.1:$(port 1)-$(port 3)"
}

stop_node() { # node
  local n=$1 pid i
  pid_alive "$n" || return 0
  pid=$(cat "$dir/node$n.pid")
  kill "$pid"
  for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  log "node $n did not stop; killing it"
  kill -9 "$pid"
}

case "${1:-}" in
start) start ;;
stop) for n in 3 2 1; do stop_node "$n"; done ;;
kill) if pid_alive "$2"; then kill -9 "$(cat "$dir/node$2.pid")"; fi ;;
start-node) start_node "$2" ;;
status) for n in "${nodes[@]}"; do echo "node$n $(port "$n") $(state "$n" || true)"; done ;;
*)
  echo "usage: $0 start|stop|status|kill N|start-node N" >&2
  exit 2
  ;;
esac
