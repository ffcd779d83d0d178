#!/usr/bin/env bash
# Runs a streaming replica (hot standby) of the machine's PostgreSQL
# (127.0.0.1:5432) on 127.0.0.1:5433, for the tests of --storage-read-dsn.
# Its data lives under ${PANORAMA_CACHE:-~/.cache/panorama}/pgreplica, or
# /var/lib/postgresql/panorama-replica as root (PostgreSQL runs as the
# postgres user, who cannot enter root's home).
#
#   hack/pgreplica.sh start   copy the primary (unless copied before) and start replicating (idempotent)
#   hack/pgreplica.sh fresh   copy the primary again and start
#   hack/pgreplica.sh stop
#   hack/pgreplica.sh status
#
# The primary needs wal_level=replica (PostgreSQL's default) and a free WAL
# sender; if its pg_hba.conf lets no replication connection in from
# 127.0.0.1, start adds one line and reloads it (never restarts it).
set -euo pipefail

PRIMARY_PORT=${PRIMARY_PORT:-5432}
PORT=${PGREPLICA_PORT:-5433}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/postgres" ] || { echo "pgreplica: no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }

if [ "$(id -u)" = 0 ]; then
  dir=${PGREPLICA_DIR:-/var/lib/postgresql/panorama-replica}
  as() { runuser -u postgres -- "$@"; }
else
  dir=${PGREPLICA_DIR:-${PANORAMA_CACHE:-$HOME/.cache/panorama}/pgreplica}
  as() { "$@"; }
fi
data=$dir/data

log() { echo "pgreplica: $*" >&2; }
primary() { psql -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -d postgres -tAc "$1"; }
running() { as "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; }

allow_replication() {
  [ "$(primary 'SHOW wal_level')" != minimal ] || { log "the primary has wal_level=minimal: set it to replica and restart it"; exit 1; }
  # pg_hba_file_rules is what the primary runs with, whoever wrote it.
  if [ "$(primary "SELECT count(*) FROM pg_hba_file_rules WHERE 'replication' = ANY(database) AND type = 'host' AND address = '127.0.0.1' AND auth_method = 'trust'")" = 0 ]; then
    local hba
    hba=$(primary 'SHOW hba_file')
    log "allowing replication from 127.0.0.1 in $hba (reload, no restart)"
    sed -i '1i host replication all 127.0.0.1/32 trust' "$hba"
    primary 'SELECT pg_reload_conf()' >/dev/null
  fi
}

copy() {
  log "copying the primary (pg_basebackup)"
  rm -rf "$data"
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  # -R writes primary_conninfo and standby.signal.
  as pg_basebackup -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$data" -X stream -R -c fast
  # Debian keeps the configuration outside the data folder: the copy
  # needs its own.
  as tee "$data/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$dir'
hot_standby = on
# Long list transactions are not cancelled by the primary's vacuum.
hot_standby_feedback = on
max_connections = 100
shared_buffers = 64MB
EOF
  as tee "$data/pg_hba.conf" >/dev/null <<EOF
local all all trust
host all all 127.0.0.1/32 trust
EOF
}

# same_primary: the data is a standby's copy of this primary (not of one
# since recreated).
same_primary() {
  [ -f "$data/standby.signal" ] || return 1
  [ "$(as "$bin/pg_controldata" "$data" | awk -F': *' '/^Database system identifier/ {print $2}')" = \
    "$(primary 'SELECT system_identifier FROM pg_control_system()')" ]
}

launch() {
  log "starting the replica on 127.0.0.1:$PORT"
  as "$bin/pg_ctl" -D "$data" -l "$dir/replica.log" -w -t 60 start >/dev/null
}

# start reuses the copy of an earlier start. A replica stopped for long may
# need WAL the primary has recycled since (no replication slot keeps it,
# which would fill the primary's disk while the replica is away): its log
# then says "requested WAL segment ... has already been removed", and
# `fresh` copies the primary again.
start() {
  if running; then return 0; fi
  allow_replication
  same_primary || copy
  launch
}

case "${1:-}" in
start) start ;;
fresh)
  if running; then as "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
  allow_replication
  copy
  launch
  ;;
stop) if running; then as "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi ;;
status)
  running || { echo "stopped"; exit 1; }
  psql -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -tAc "SELECT 'in recovery: ' || pg_is_in_recovery() || ', replayed ' || pg_last_wal_replay_lsn()"
  ;;
*)
  echo "usage: $0 start|fresh|stop|status" >&2
  exit 2
  ;;
esac
