#!/usr/bin/env bash
# The body of `make run`: PostgreSQL and Redis as local processes with their
# data under .run/, then the whole platform (deploy/local/devstack), which
# prints the base URL and a working API key. Ctrl-C stops everything.
#
# Environment: SWITCHBOARD_HTTP_ADDR (127.0.0.1:8080), SWITCHBOARD_PG_PORT
# (15432), SWITCHBOARD_REDIS_PORT (16379), SWITCHBOARD_ADMIN_TOKEN
# (dev-operator-token). The default ports lie below Linux's range for
# outgoing connections (32768-60999), so a connection this machine opens
# can never hold one of them when the servers start.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

# One `make run` per checkout: a second would share the first's database
# servers and, on its way out, stop them under it.
mkdir -p "$root/.run"
exec {lock}>"$root/.run/run.lock"
if ! flock -n "$lock"; then
	echo "make run: another 'make run' of this checkout is running; stop it (Ctrl-C) first" >&2
	exit 1
fi

deploy/local/infra.sh deps
pg_port=${SWITCHBOARD_PG_PORT:-15432}
redis_port=${SWITCHBOARD_REDIS_PORT:-16379}
# The servers must not inherit the lock: they would keep it after a crash.
if ! infra=$(deploy/local/infra.sh start "$root/.run/infra" "$pg_port" "$redis_port" {lock}>&-); then
	cat >&2 <<-EOF

		make run: PostgreSQL (port $pg_port) or Redis (port $redis_port) did not start; the
		lines above say why. When a port is taken by another program, choose free ones:

		  make run SWITCHBOARD_PG_PORT=25432 SWITCHBOARD_REDIS_PORT=26379

		(SWITCHBOARD_HTTP_ADDR moves the API from 127.0.0.1:8080 the same way.)
	EOF
	exit 1
fi
PG_DSN=$(sed -n 's/^PG_DSN=//p' <<<"$infra")
REDIS_ADDR=$(sed -n 's/^REDIS_ADDR=//p' <<<"$infra")
trap 'deploy/local/infra.sh stop "$root/.run/infra"' EXIT

.bin/devstack -bin .bin -dir .run -pg "$PG_DSN" -redis "$REDIS_ADDR" \
  -http "${SWITCHBOARD_HTTP_ADDR:-127.0.0.1:8080}" \
  -admin-token "${SWITCHBOARD_ADMIN_TOKEN:-dev-operator-token}" {lock}>&-
