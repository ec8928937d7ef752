#!/usr/bin/env bash
# test.sh: the body of `make test`. Starts throwaway PostgreSQL and Redis
# servers on free ports, runs `go test` in every module against them, and
# always stops and deletes the servers afterwards.
#
# Environment:
#   MODULES          modules to test (make passes its MODULES variable);
#                    default "proto pkg gateway services/identity"
#   GO_TEST_TIMEOUT  per-module `go test -timeout` (default 10m)
#   GO_TEST_FLAGS    extra `go test` flags, e.g. "-race" or "-run TestX -v"
#   KEEP_INFRA=1     leave the servers running and their folder in place
#
# Tests find the servers through SWITCHBOARD_TEST_PG_DSN (superuser DSN to
# the `postgres` database) and SWITCHBOARD_TEST_REDIS_ADDR (host:port), and
# Chromium through SWITCHBOARD_CHROMIUM (installed when the gateway is tested).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
INFRA="$ROOT/deploy/local/infra.sh"
MODULES=${MODULES:-"proto pkg gateway services/identity"}
GO_TEST_TIMEOUT=${GO_TEST_TIMEOUT:-10m}
read -r -a EXTRA_FLAGS <<<"${GO_TEST_FLAGS:-}"

say() { printf '==> %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# free_port VAR [EXCLUDED...] sets VAR to a TCP port nothing listens on. It is
# chosen below the kernel's range for outgoing connections (so no connection
# opened meanwhile can take it before the server binds it) and reserved
# among our own processes by a lock on $PORT_LOCKS/<port> (the scheme of
# pkg/freeport, which the Go tests use), held by this script and the servers
# it starts until they stop. The servers may still lose a race to an
# unrelated process: the start below then tries other ports.
PORT_LOCKS=${TMPDIR:-/tmp}/switchboard-ports
free_port() {
	local var=$1 lo=20000 hi p i fd
	shift
	read -r hi _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || hi=32768
	hi=$((hi - 1))
	mkdir -p "$PORT_LOCKS" && chmod 1777 "$PORT_LOCKS" 2>/dev/null || true
	for i in $(seq 1 500); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
		[[ " $* " == *" $p "* ]] && continue
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
		exec {fd}>>"$PORT_LOCKS/$p" || continue
		if ! flock -n "$fd"; then
			exec {fd}>&-
			continue
		fi
		printf -v "$var" '%s' "$p"
		return 0
	done
	echo "test.sh: no free port found" >&2
	return 1
}

T0=$(now)
"$INFRA" deps
# The gateway's e2e tests open the API reference page in headless Chromium
# (gateway/e2e/docs_test.go). A failed install does not stop the run: that
# test then fails, saying Chromium is missing.
if [[ " $MODULES " == *" gateway "* ]]; then
	if CHROMIUM=$("$INFRA" browser); then
		export SWITCHBOARD_CHROMIUM=$CHROMIUM
	else
		say "Chromium is missing and could not be installed: the browser test will fail"
	fi
fi

# Memory is the fastest disk: on this kind of VM, CREATE DATABASE (one per
# test) takes ~250 ms on disk and ~20 ms on tmpfs. Use /dev/shm when it has
# room (Docker gives it only 64 MB by default), else TMPDIR.
base=${TMPDIR:-/tmp}
if [ -d /dev/shm ] && [ -w /dev/shm ] &&
	[ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -ge $((1024 * 1024)) ] 2>/dev/null; then
	base=/dev/shm
fi
WORK=$(mktemp -d "$base/switchboard-test.XXXXXX")
# The postgres user must reach the data under it when we run as root.
chmod 0755 "$WORK"
cleanup() {
	local rc=$?
	if [ "${KEEP_INFRA:-}" = 1 ]; then
		say "KEEP_INFRA=1: servers left running; stop with: $INFRA purge $WORK"
	else
		"$INFRA" purge "$WORK" || say "could not clean up $WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

T1=$(now)
ADDRS=""
for attempt in 1 2 3 4 5; do
	free_port PGPORT
	free_port REDISPORT "$PGPORT"
	ADDRS=$("$INFRA" start "$WORK" "$PGPORT" "$REDISPORT") && break
	say "servers did not start on ports $PGPORT and $REDISPORT (attempt $attempt of 5); trying others"
	ADDRS=""
	"$INFRA" stop "$WORK" || true
done
PG_DSN=$(sed -n 's/^PG_DSN=//p' <<<"$ADDRS")
REDIS_ADDR=$(sed -n 's/^REDIS_ADDR=//p' <<<"$ADDRS")
[ -n "$PG_DSN" ] && [ -n "$REDIS_ADDR" ] || { echo "test.sh: infra.sh start printed no addresses" >&2; exit 1; }
export SWITCHBOARD_TEST_PG_DSN=$PG_DSN
export SWITCHBOARD_TEST_REDIS_ADDR=$REDIS_ADDR
say "infra up in $(since "$T1"): $PG_DSN, redis $REDIS_ADDR"

declare -a SUMMARY=()
FAILED=0
for m in $MODULES; do
	if [ ! -f "$ROOT/$m/go.mod" ]; then
		SUMMARY+=("FAIL  $m (no go.mod)")
		FAILED=1
		continue
	fi
	say "go test $m"
	t=$(now)
	if (cd "$ROOT/$m" && go test -count=1 -p 2 -timeout "$GO_TEST_TIMEOUT" "${EXTRA_FLAGS[@]}" ./...); then
		SUMMARY+=("ok    $m ($(since "$t"))")
	else
		SUMMARY+=("FAIL  $m ($(since "$t"))")
		FAILED=1
	fi
done

echo
echo "test summary:"
printf '  %s\n' "${SUMMARY[@]}"
echo "  total $(since "$T0")"
if [ "$FAILED" -ne 0 ]; then
	echo "FAILED"
	exit 1
fi
echo "PASSED"
