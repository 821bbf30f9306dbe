#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests and benchmarks: a fresh data dir,
# loopback only, on its own port, run by the `postgres` user (initdb refuses
# root). Installs PostgreSQL with apt-get when it is missing.
#
#   .ci/postgres.sh start DIR PORT   # prints the URL of the `postgres` database
#   .ci/postgres.sh stop DIR
#   .ci/postgres.sh install          # only the binaries: the failover tests
#                                    # (tests/api/postgres/failover.rs) run
#                                    # clusters of their own with them
set -euo pipefail

find_bin() {
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"
    return
  fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
    echo "$dir"
    return
  fi
  return 1
}

# The server's binaries and pg_basebackup beside them (the failover tests'
# standbys), installed if any is missing; prints their folder.
ensure_bin() {
  local bin
  if ! bin=$(find_bin) || [ ! -x "$(dirname "$(readlink -f "$bin/pg_ctl")")/pg_basebackup" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    bin=$(find_bin)
  fi
  echo "$bin"
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

cmd=${1:?usage: postgres.sh start DIR PORT | stop DIR | install}

case "$cmd" in
install)
  ensure_bin >/dev/null
  ;;
start)
  dir=${2:?data directory}
  port=${3:?port}
  bin=$(ensure_bin)
  rm -rf "$dir"
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
  as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=300 -c fsync=on" \
    start >/dev/null
  echo "postgres://postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  dir=${2:?data directory}
  bin=$(find_bin)
  if [ -d "$dir/data" ]; then
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  ;;
*)
  echo "usage: postgres.sh start DIR PORT | stop DIR | install" >&2
  exit 2
  ;;
esac
