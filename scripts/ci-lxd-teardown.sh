#!/usr/bin/env bash
# Undoes the running part of scripts/ci-lxd-setup.sh: force-deletes every
# instance, asks the daemon to shut down and waits for the process whose PID
# the setup saved (killing that PID after 30 s). The packages, the storage
# pool and the busybox image stay, so the next setup takes well under a
# second. Idempotent and quiet when LXD is absent or already stopped; run as
# root (meant for a trap in scripts/test.sh).
set -uo pipefail

pidfile="${THREADLINE_LXD_PIDFILE:-/run/threadline-lxd.pid}"
log() { echo "ci-lxd-teardown: $*"; }

if ! command -v lxd >/dev/null || ! command -v lxc >/dev/null; then
	log "lxd not installed; nothing to do"
	rm -f "$pidfile"
	exit 0
fi

if lxd waitready --timeout=1 >/dev/null 2>&1; then
	for name in $(lxc list --format csv --columns n 2>/dev/null); do
		log "deleting instance $name"
		lxc delete --force "$name" || log "could not delete $name"
	done
	timeout 60 lxd shutdown --timeout=30 >/dev/null 2>&1 || log "lxd shutdown did not finish cleanly"
fi

if [[ -s "$pidfile" ]]; then
	pid="$(cat "$pidfile")"
	for _ in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "daemon $pid still alive after 30 s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
fi
log "done"
exit 0
