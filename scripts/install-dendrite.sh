#!/usr/bin/env bash
# Installs the Matrix homeserver the bot/matrix tests run against: Dendrite at a
# pinned version, built from the Go module proxy without cgo, into
# .cache/dendrite/bin (dendrite, generate-keys, generate-config, create-account).
# Idempotent: binaries that already report the pinned module version are kept.
# The tests find them there (or at $DENDRITE_BIN); see bot/matrix/dendritetest.
# A cold build takes about two minutes on two cores.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="v0.13.8"
module="github.com/matrix-org/dendrite"
bin="${DENDRITE_BIN:-$root/.cache/dendrite/bin}"
tools=(dendrite generate-keys generate-config create-account)

# has_pin reports whether the binary exists and was built from the pinned module.
has_pin() {
	[[ -x "$bin/$1" ]] && go version -m "$bin/$1" 2>/dev/null |
		awk -v m="$module" -v v="$version" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

missing=()
for t in "${tools[@]}"; do
	has_pin "$t" || missing+=("$module/cmd/$t@$version")
done
if [[ ${#missing[@]} -eq 0 ]]; then
	echo "install-dendrite: dendrite $version already in $bin"
	exit 0
fi

mkdir -p "$bin"
echo "install-dendrite: building ${#missing[@]} of ${#tools[@]} binaries of dendrite $version into $bin"
CGO_ENABLED=0 GOBIN="$bin" go install "${missing[@]}"
for t in "${tools[@]}"; do
	if ! has_pin "$t"; then
		echo "install-dendrite: $bin/$t does not report $module $version after the build" >&2
		exit 1
	fi
done
echo "install-dendrite: dendrite $version installed in $bin"
