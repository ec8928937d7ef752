#!/usr/bin/env bash
# infra.sh: PostgreSQL and Redis as plain local processes, for `make run` and
# `make test`. No Docker, no systemd: the servers run from a data folder the
# caller chooses, so several copies (a dev run and a test run) can coexist.
#
#   infra.sh deps                          install missing packages (Debian/Ubuntu)
#   infra.sh browser                       install Chromium if missing, print its path
#   infra.sh npm                           install npm if missing (the build fetches Redoc)
#   infra.sh start  DIR PGPORT REDISPORT   init if needed, start, wait until both answer
#   infra.sh status DIR                    print the addresses if both run, else exit 1
#   infra.sh stop   DIR                    stop both (data stays)
#   infra.sh purge  DIR                    stop both and delete all data
#
# start and status print two machine-readable lines on stdout:
#   PG_DSN=postgres://postgres@127.0.0.1:PGPORT/postgres?sslmode=disable
#   REDIS_ADDR=127.0.0.1:REDISPORT
# Everything else goes to stderr.
#
# PostgreSQL refuses to run as root. When this script runs as root, initdb and
# pg_ctl run as the `postgres` user (created by the Debian package) on a folder
# it owns. If that user cannot reach DIR (a parent folder without x for others,
# e.g. a mktemp dir or /root/...), or DIR is so long that the Unix socket path
# would pass the kernel's 107-byte limit, PostgreSQL's files live in
# /tmp/switchboard-pg-<hash of DIR> instead; DIR/pg.location records where.
#
# Environment: PG_BINDIR overrides the PostgreSQL bin folder.
set -euo pipefail

log() { printf 'infra: %s\n' "$*" >&2; }
die() { printf 'infra: error: %s\n' "$*" >&2; exit 1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

# pg_bindir prints the newest PostgreSQL server bin folder (Debian keeps them
# in /usr/lib/postgresql/<version>/bin, off PATH).
pg_bindir() {
	if [ -n "${PG_BINDIR:-}" ]; then
		[ -x "$PG_BINDIR/initdb" ] || die "PG_BINDIR=$PG_BINDIR has no initdb"
		echo "$PG_BINDIR"; return 0
	fi
	local d best=""
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && best=$d
	done
	if [ -z "$best" ] && command -v initdb >/dev/null 2>&1; then
		best=$(dirname "$(command -v initdb)")
	fi
	[ -n "$best" ] || return 1
	echo "$best"
}

# apt_install HINT PACKAGE...: installs the packages with apt-get, as root or
# through sudo; without apt-get, dies with HINT.
apt_install() {
	local hint=$1
	shift
	command -v apt-get >/dev/null 2>&1 || die "missing $*: $hint"
	local sudo=()
	if ! is_root; then
		command -v sudo >/dev/null 2>&1 || die "missing $*: run as root or install them: apt-get install $*"
		sudo=(sudo)
	fi
	log "installing $* with apt-get"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >&2
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"$@" </dev/null >&2
}

cmd_deps() {
	local missing=()
	pg_bindir >/dev/null 2>&1 || missing+=(postgresql)
	command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
	if is_root && ! id postgres >/dev/null 2>&1 && [[ ! " ${missing[*]} " == *" postgresql "* ]]; then
		# The server is there but not the user it must run as (not a Debian
		# install): the package's postinst creates it.
		missing+=(postgresql)
	fi
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "install PostgreSQL (server, 13 or newer) and redis-server with your package manager, or set PG_BINDIR" \
			"${missing[@]}"
	fi
	local bin
	bin=$(pg_bindir) || die "no PostgreSQL server binaries found after install"
	command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after install"
	if is_root; then id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' OS user"; fi
	log "postgres: $bin ($("$bin/postgres" --version)); redis: $(redis-server --version | cut -d' ' -f1-3)"
}

# cmd_browser installs Debian's Chromium for the browser tests when missing
# (only `make test` needs it, not `make run`) and prints its path.
cmd_browser() {
	if ! command -v chromium >/dev/null 2>&1; then
		apt_install "install Chromium (Debian's chromium package) with your package manager" chromium
	fi
	local bin
	bin=$(command -v chromium) || die "chromium still missing after install"
	log "chromium: $bin ($("$bin" --version 2>/dev/null || echo "version unknown"))"
	echo "$bin"
}

# cmd_npm installs Debian's npm (with Node.js) when missing: the build
# fetches the Redoc bundle of the API reference pages with it.
cmd_npm() {
	if ! command -v npm >/dev/null 2>&1; then
		apt_install "install Node.js and npm with your package manager" npm
	fi
	command -v npm >/dev/null 2>&1 || die "npm still missing after install"
}

# as_pg runs a command as the user that owns the cluster, from / (the
# caller's folder, a clone under /root say, may be closed to that user, and
# pg_ctl would say so on every stop). Every path given to it is absolute.
as_pg() {
	if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

abspath() { mkdir -p "$1" && (cd "$1" && pwd -P); }

# pg_home DIR prints the folder holding PostgreSQL's data, socket and log for
# DIR, creating it owned by the server user. It prints the same answer on
# every call for a given DIR.
pg_home() {
	local dir=$1 home
	if [ -f "$dir/pg.location" ]; then
		home=$(cat "$dir/pg.location")
	else
		home="$dir/pg"
		# socket path: <home>/sock/.s.PGSQL.NNNNN must stay under 107 bytes
		if [ $((${#home} + 20)) -gt 100 ]; then
			home=""
		else
			mkdir -p "$home"
			if is_root; then
				chown postgres: "$home"
				as_pg test -w "$home" 2>/dev/null || { rmdir "$home" 2>/dev/null || true; home=""; }
			fi
		fi
		if [ -z "$home" ]; then
			home="/tmp/switchboard-pg-$(printf '%s' "$dir" | sha256sum | cut -c1-16)"
			log "PostgreSQL files for $dir go to $home (DIR is not reachable by the postgres user or too long)"
		fi
		echo "$home" >"$dir/pg.location"
	fi
	# A predictable /tmp name: refuse one someone planted as a symlink.
	[ -L "$home" ] && die "$home is a symbolic link; refusing to use it"
	mkdir -p "$home"
	if is_root; then chown postgres: "$home"; fi
	chmod 0700 "$home"
	echo "$home"
}

# alive PID: the process exists and is not a zombie. A daemonized Redis is
# reparented to PID 1, which in a container may reap it only much later, and
# kill -0 succeeds on a zombie.
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

redis_ping() (
	port=$1 reply=""
	exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || exit 1
	printf "PING\r\n" >&3
	read -r -t 2 reply <&3 || true
	[[ $reply == "+PONG"* ]]
)

# pg_running_port prints the port of the cluster in DATA when its postmaster
# is alive, else fails.
pg_running_port() {
	local bin=$1 data=$2
	[ -f "$data/PG_VERSION" ] || return 1
	as_pg "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1 || return 1
	sed -n 4p "$data/postmaster.pid"
}

redis_running_port() {
	local rdir=$1 pid
	[ -f "$rdir/redis.pid" ] && [ -f "$rdir/port" ] || return 1
	pid=$(cat "$rdir/redis.pid")
	alive "$pid" || return 1
	redis_ping "$(cat "$rdir/port")" || return 1
	cat "$rdir/port"
}

print_addrs() {
	echo "PG_DSN=postgres://postgres@127.0.0.1:$1/postgres?sslmode=disable"
	echo "REDIS_ADDR=127.0.0.1:$2"
}

check_port() {
	[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ] || die "bad port: $1"
}

start_pg() {
	local bin=$1 dir=$2 port=$3 home data running
	home=$(pg_home "$dir")
	data="$home/data"
	if running=$(pg_running_port "$bin" "$data"); then
		[ "$running" = "$port" ] || log "PostgreSQL already runs on port $running (asked for $port); keeping it"
		echo "$running"; return 0
	fi
	tcp_open "$port" && die "port $port is taken by another process"
	if [ ! -f "$data/PG_VERSION" ]; then
		log "initdb $data"
		rm -rf "$data"
		# Byte-order collation (C) for fast, predictable indexes, but a UTF-8
		# character type: lower() and pg_trgm must know Cyrillic letters
		# (case-insensitive name order, fuzzy contact search).
		as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C --lc-ctype=C.UTF-8 \
			--no-sync --no-instructions >"$home/initdb.log" 2>&1 ||
			{ cat "$home/initdb.log" >&2; die "initdb failed"; }
		# Our settings live in one included file, rewritten on every start so
		# the port can change between runs.
		echo "include_if_exists 'switchboard.conf'" >>"$data/postgresql.conf"
		# Trust on loopback only; the socket sits in a 0700 folder.
		cat >"$data/pg_hba.conf" <<-'EOF'
			local all all              trust
			host  all all 127.0.0.1/32 trust
		EOF
	fi
	as_pg mkdir -p "$home/sock"
	cat >"$data/switchboard.conf" <<-EOF
		listen_addresses = '127.0.0.1'
		port = $port
		unix_socket_directories = '$home/sock'
		max_connections = 300
		# Throwaway data: trade durability for speed.
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		# Per-statement counts and times for profiling (make bench's
		# SWITCHBOARD_BENCH_PROFILE reads them); the cost is a few percent.
		shared_preload_libraries = 'pg_stat_statements'
		pg_stat_statements.track = top
	EOF
	if is_root; then chown postgres: "$data/switchboard.conf" "$data/pg_hba.conf"; fi
	log "starting PostgreSQL on 127.0.0.1:$port (log: $home/postgres.log)"
	as_pg "$bin/pg_ctl" start -w -t 60 -D "$data" -l "$home/postgres.log" >/dev/null ||
		{ tail -n 20 "$home/postgres.log" >&2 || true; die "PostgreSQL did not start"; }
	local i
	for i in $(seq 1 100); do
		"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres && { echo "$port"; return 0; }
		sleep 0.1
	done
	die "PostgreSQL does not answer on 127.0.0.1:$port"
}

start_redis() {
	local dir=$1 port=$2 rdir="$1/redis" running
	mkdir -p "$rdir"
	if running=$(redis_running_port "$rdir"); then
		[ "$running" = "$port" ] || log "Redis already runs on port $running (asked for $port); keeping it"
		echo "$running"; return 0
	fi
	tcp_open "$port" && die "port $port is taken by another process"
	log "starting Redis on 127.0.0.1:$port (log: $rdir/redis.log)"
	echo "$port" >"$rdir/port"
	rm -f "$rdir/redis.pid"
	redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
		--daemonize yes --pidfile "$rdir/redis.pid" --logfile "$rdir/redis.log" --dir "$rdir" \
		--save '' --appendonly no >&2 ||
		die "redis-server did not start"
	local i
	for i in $(seq 1 100); do
		redis_ping "$port" && { echo "$port"; return 0; }
		sleep 0.1
	done
	tail -n 20 "$rdir/redis.log" >&2 || true
	die "Redis does not answer on 127.0.0.1:$port"
}

cmd_start() {
	[ $# -eq 3 ] || die "usage: infra.sh start DIR PGPORT REDISPORT"
	check_port "$2"; check_port "$3"
	local dir bin pgport redisport
	dir=$(abspath "$1")
	bin=$(pg_bindir) || die "PostgreSQL server not found: run 'infra.sh deps'"
	command -v redis-server >/dev/null 2>&1 || die "redis-server not found: run 'infra.sh deps'"
	if is_root; then id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' OS user"; fi
	pgport=$(start_pg "$bin" "$dir" "$2")
	redisport=$(start_redis "$dir" "$3")
	print_addrs "$pgport" "$redisport"
}

cmd_status() {
	[ $# -eq 1 ] || die "usage: infra.sh status DIR"
	[ -d "$1" ] || die "$1 does not exist"
	local dir bin pgport redisport home
	dir=$(abspath "$1")
	bin=$(pg_bindir) || die "PostgreSQL server not found"
	[ -f "$dir/pg.location" ] || die "no PostgreSQL in $dir"
	home=$(cat "$dir/pg.location")
	pgport=$(pg_running_port "$bin" "$home/data") || die "PostgreSQL of $dir is not running"
	redisport=$(redis_running_port "$dir/redis") || die "Redis of $dir is not running"
	print_addrs "$pgport" "$redisport"
}

cmd_stop() {
	[ $# -eq 1 ] || die "usage: infra.sh stop DIR"
	[ -d "$1" ] || { log "$1 does not exist: nothing to stop"; return 0; }
	local dir bin home pid i
	dir=$(abspath "$1")
	if [ -f "$dir/pg.location" ]; then
		home=$(cat "$dir/pg.location")
		bin=$(pg_bindir) || die "PostgreSQL server not found"
		if pg_running_port "$bin" "$home/data" >/dev/null; then
			log "stopping PostgreSQL ($home/data)"
			as_pg "$bin/pg_ctl" stop -w -t 60 -m fast -D "$home/data" >/dev/null
		fi
	fi
	if [ -f "$dir/redis/redis.pid" ]; then
		pid=$(cat "$dir/redis/redis.pid")
		if alive "$pid"; then
			log "stopping Redis (pid $pid)"
			kill "$pid"
			for i in $(seq 1 100); do
				alive "$pid" || break
				sleep 0.1
			done
			alive "$pid" && { log "Redis did not stop, killing it"; kill -9 "$pid" || true; }
		fi
		rm -f "$dir/redis/redis.pid"
	fi
}

cmd_purge() {
	[ $# -eq 1 ] || die "usage: infra.sh purge DIR"
	[ -d "$1" ] || return 0
	cmd_stop "$1"
	local dir home
	dir=$(abspath "$1")
	if [ -f "$dir/pg.location" ]; then
		home=$(cat "$dir/pg.location")
		case $home in
		"$dir"/pg | /tmp/switchboard-pg-*) rm -rf "$home" ;;
		*) log "not deleting unexpected PostgreSQL folder $home" ;;
		esac
	fi
	rm -rf "$dir"
}

main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case $cmd in
	deps) cmd_deps "$@" ;;
	browser) cmd_browser "$@" ;;
	npm) cmd_npm "$@" ;;
	start) cmd_start "$@" ;;
	status) cmd_status "$@" ;;
	stop) cmd_stop "$@" ;;
	purge) cmd_purge "$@" ;;
	*)
		sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
