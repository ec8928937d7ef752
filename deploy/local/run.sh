#!/usr/bin/env bash
# The body of `make run`: PostgreSQL and Redis as local processes with their
# data under .run/, then the whole platform (deploy/local/devstack), which
# prints the base URL and a working API key. Ctrl-C stops everything.
#
# Environment: SWITCHBOARD_HTTP_ADDR (127.0.0.1:8080), SWITCHBOARD_PG_PORT
# (55432), SWITCHBOARD_REDIS_PORT (56379), SWITCHBOARD_ADMIN_TOKEN
# (dev-operator-token).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

deploy/local/infra.sh deps
infra=$(deploy/local/infra.sh start "$root/.run/infra" "${SWITCHBOARD_PG_PORT:-55432}" "${SWITCHBOARD_REDIS_PORT:-56379}")
PG_DSN=$(sed -n 's/^PG_DSN=//p' <<<"$infra")
REDIS_ADDR=$(sed -n 's/^REDIS_ADDR=//p' <<<"$infra")
trap 'deploy/local/infra.sh stop "$root/.run/infra"' EXIT

.bin/devstack -bin .bin -dir .run -pg "$PG_DSN" -redis "$REDIS_ADDR" \
  -http "${SWITCHBOARD_HTTP_ADDR:-127.0.0.1:8080}" \
  -admin-token "${SWITCHBOARD_ADMIN_TOKEN:-dev-operator-token}"
