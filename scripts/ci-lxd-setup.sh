#!/usr/bin/env bash
# Prepares a local LXD for the agentcore/execution integration tests, with no
# network at all: installs Debian's lxd when it is missing, starts the daemon
# directly (no systemd) with HTTP(S)_PROXY at a dead loopback port so that its
# start-up fetch of image-server metadata goes nowhere, preseeds a dir storage
# pool with NO network and a default profile with only a root disk (no NIC),
# and imports a tiny busybox image built locally from Debian's busybox-static
# package (nothing comes from an image server). Idempotent; run as root.
# Undo with scripts/ci-lxd-teardown.sh. About 25 s from scratch (the apt
# install is most of it), well under a second when everything is in place.
#
# Environment: THREADLINE_LXD_IMAGE (image alias, default threadline-busybox),
# THREADLINE_LXD_PIDFILE (default /run/threadline-lxd.pid).
set -euo pipefail

image="${THREADLINE_LXD_IMAGE:-threadline-busybox}"
pidfile="${THREADLINE_LXD_PIDFILE:-/run/threadline-lxd.pid}"
deadproxy="http://127.0.0.1:9"
log() { echo "ci-lxd-setup: $*"; }

if [[ $(id -u) -ne 0 ]]; then
	echo "ci-lxd-setup: must run as root" >&2
	exit 1
fi

# apt_ready makes sure the package lists know pkg, running apt-get update only
# when they do not.
apt_ready() {
	local policy
	policy="$(apt-cache policy "$1" 2>/dev/null || true)"
	if [[ "$policy" != *"Candidate: "[0-9]* ]]; then
		log "apt-get update"
		apt-get update -qq
	fi
}

# 1. The packages.
if ! command -v lxd >/dev/null || ! command -v lxc >/dev/null; then
	apt_ready lxd
	# Without a policy-rc.d the postinst could start lxd through its sysv script
	# without the proxy variables; forbid it for the duration of the install.
	tmp_policy=""
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		tmp_policy=1
	fi
	log "apt-get install -y lxd"
	start=$SECONDS
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lxd >/dev/null
	[[ -n "$tmp_policy" ]] && rm -f /usr/sbin/policy-rc.d
	log "lxd installed in $((SECONDS - start)) s"
fi

# 2. The daemon.
if lxd waitready --timeout=1 >/dev/null 2>&1; then
	log "daemon already running"
else
	mkdir -p /var/log/lxd
	group=()
	getent group lxd >/dev/null && group=(--group lxd)
	HTTP_PROXY="$deadproxy" HTTPS_PROXY="$deadproxy" http_proxy="$deadproxy" https_proxy="$deadproxy" \
		NO_PROXY="" no_proxy="" \
		setsid lxd "${group[@]}" --logfile=/var/log/lxd/lxd.log </dev/null >/dev/null 2>&1 &
	echo $! >"$pidfile"
	if ! lxd waitready --timeout=30; then
		echo "ci-lxd-setup: lxd did not become ready; /var/log/lxd/lxd.log:" >&2
		tail -n 30 /var/log/lxd/lxd.log >&2 || true
		exit 1
	fi
	log "daemon started (pid $(cat "$pidfile"))"
fi

# 3. Storage, no network, a NIC-less default profile, loopback proxies.
if ! lxc storage show default >/dev/null 2>&1; then
	lxd init --preseed <<-'EOF'
		config:
		  core.proxy_http: http://127.0.0.1:9
		  core.proxy_https: http://127.0.0.1:9
		  images.auto_update_interval: "0"
		networks: []
		storage_pools:
		- name: default
		  driver: dir
		profiles:
		- name: default
		  description: "threadline CI: root disk only, no NIC"
		  config: {}
		  devices:
		    root:
		      path: /
		      pool: default
		      type: disk
	EOF
	log "preseeded: dir pool default, no network, default profile without NIC"
fi
# Enforced on every run, in case an earlier state had other values.
lxc config set core.proxy_http "$deadproxy"
lxc config set core.proxy_https "$deadproxy"
lxc config set images.auto_update_interval 0
for dev in $(lxc profile device list default); do
	if [[ "$(lxc profile device get default "$dev" type)" == nic ]]; then
		log "removing NIC $dev from the default profile"
		lxc profile device remove default "$dev"
	fi
done

# 4. The busybox image, built locally.
if lxc image info "$image" >/dev/null 2>&1; then
	log "image $image present"
else
	start=$SECONDS
	work="$(mktemp -d)"
	trap 'rm -rf "$work"' EXIT
	cd "$work"
	if ! apt-get download busybox-static >/dev/null 2>&1; then
		apt_ready busybox-static
		apt-get download busybox-static >/dev/null
	fi
	dpkg-deb -x busybox-static_*.deb pkg
	rootfs="$work/image/rootfs"
	mkdir -p "$rootfs"/{bin,sbin,etc,dev,proc,sys,tmp,root,run,var/tmp,usr/bin,usr/sbin}
	chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
	install -m 0755 pkg/bin/busybox "$rootfs/bin/busybox"
	for applet in $("$rootfs/bin/busybox" --list); do
		[[ -e "$rootfs/bin/$applet" ]] || ln -s busybox "$rootfs/bin/$applet"
	done
	# A minimal init: `lxc stop` sends SIGPWR, which ends it cleanly.
	cat >"$rootfs/sbin/init" <<-'EOF'
		#!/bin/sh
		trap 'exit 0' PWR TERM INT
		mount -t tmpfs tmpfs /tmp 2>/dev/null
		while :; do sleep 3600 & wait $!; done
	EOF
	chmod 0755 "$rootfs/sbin/init"
	printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/home/agent:/bin/sh\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nagent:x:1000:\n' >"$rootfs/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
	echo threadline-ci >"$rootfs/etc/hostname"
	cat >"$work/image/metadata.yaml" <<-EOF
		architecture: $(uname -m)
		creation_date: $(date +%s)
		properties:
		  description: busybox-static test image
		  os: busybox
		  release: "1.35"
	EOF
	tar -C "$work/image" --numeric-owner -czf "$work/image.tar.gz" metadata.yaml rootfs
	lxc image import "$work/image.tar.gz" --alias "$image" >/dev/null
	log "image $image built and imported in $((SECONDS - start)) s"
fi
log "ready: lxc launch $image NAME"
