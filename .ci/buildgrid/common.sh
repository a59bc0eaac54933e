# Shared by setup/start/stop/restart-server. Sourced, not executed.
# shellcheck shell=bash

BG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BG_REPO="$(cd "$BG_DIR/../.." && pwd)"
BG_HOME="${VERTER_BUILDGRID_HOME:-$BG_REPO/target/buildgrid}"
BG_VENV="$BG_HOME/venv"
BG_PY="$BG_VENV/bin/python"
BG_CURRENT="$BG_HOME/current" # symlink to the live run-* directory
BG_ENV_FILE="$BG_HOME/env"

bg_log() { printf '[buildgrid] %s\n' "$*" >&2; }
bg_die() { printf '[buildgrid] ERROR: %s\n' "$*" >&2; exit 1; }

# Directory holding initdb/pg_ctl/postgres: $VERTER_PG_BINDIR, else the newest
# /usr/lib/postgresql/*/bin (Debian layout). Prints nothing and fails if none.
bg_pg_bindir() {
    local d best=""
    if [[ -n "${VERTER_PG_BINDIR:-}" ]]; then
        [[ -x "$VERTER_PG_BINDIR/pg_ctl" && -x "$VERTER_PG_BINDIR/initdb" && -x "$VERTER_PG_BINDIR/postgres" ]] || return 1
        printf '%s\n' "$VERTER_PG_BINDIR"
        return 0
    fi
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
        if [[ -x "$d/pg_ctl" && -x "$d/initdb" && -x "$d/postgres" ]]; then best="$d"; fi
    done
    [[ -n "$best" ]] || return 1
    printf '%s\n' "$best"
}

# PostgreSQL refuses to run as root: as root, run its tools as the 'postgres'
# system user (created by the Debian package); otherwise as ourselves.
bg_as_pg() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# True while pid $1 runs. A zombie counts as gone: our daemons are orphans,
# and the machine's init may take seconds to reap them.
bg_alive() {
    local st
    st="$(cut -d')' -f2 "/proc/$1/stat" 2>/dev/null | cut -d' ' -f2)" || return 1
    [[ -n "$st" && "$st" != Z && "$st" != X ]]
}

# Send signal $4 (default TERM) to pid $1 if its command line contains $2
# (guards against a reused pid), wait up to $3 seconds (default 10) for it to
# exit, then SIGKILL.
bg_kill_pid() {
    local pid="$1" match="$2" wait_s="${3:-10}" sig="${4:-TERM}" i
    [[ -n "$pid" ]] || return 0
    bg_alive "$pid" || return 0
    if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$match"; then
        bg_log "pid $pid is not '$match' any more; leaving it alone"
        return 0
    fi
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < wait_s * 20; i++)); do
        bg_alive "$pid" || return 0
        sleep 0.05
    done
    bg_log "pid $pid did not exit after ${wait_s}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# Start the BuildGrid server of run dir $1 on port $2 (instance $3) and wait
# until it answers GetCapabilities. Appends to $1/logs/server.log.
bg_start_server() {
    local run="$1" port="$2" instance="$3" pid
    if "$BG_PY" "$BG_DIR/bgctl.py" port-in-use "$port"; then
        bg_log "127.0.0.1:$port is already in use"
        return 1
    fi
    # Log level: 1 = WARNING (default), 2 = INFO (a line per request), 3 = DEBUG.
    # setsid: its own process group, away from the caller's terminal signals.
    local v="${VERTER_BUILDGRID_SERVER_VERBOSITY:-1}"
    [[ "$v" =~ ^[1-3]$ ]] || { bg_log "VERTER_BUILDGRID_SERVER_VERBOSITY must be 1, 2 or 3"; return 1; }
    setsid nohup "$BG_VENV/bin/bgd" server start "-$(printf 'v%.0s' $(seq "$v"))" "$run/config.yml" \
        </dev/null >>"$run/logs/server.log" 2>&1 &
    pid=$!
    echo "$pid" >"$run/server.pid"
    "$BG_PY" "$BG_DIR/bgctl.py" wait-server "127.0.0.1:$port" "$instance" 60 "$pid"
}
