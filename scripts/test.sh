#!/usr/bin/env bash
# The test command: installs what the tests need (the pinned agent CLIs), makes
# sure Postgres answers, then runs gofmt, go vet and go test -race on everything.
# Real parts only: the store and run hub tests need Postgres (TEST_DATABASE_URL)
# and fail, not skip, when it is unreachable; the Claude end-to-end tests need the
# real CLI (THREADLINE_E2E=1 makes its absence a failure) and root for `unshare -n`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
export THREADLINE_REQUIRE_POSTGRES=1

pg_ready() { psql "${TEST_DATABASE_URL%%\?*}" -tAc 'select 1' >/dev/null 2>&1; }
if ! pg_ready && [[ -d /etc/postgresql ]] && command -v pg_ctlcluster >/dev/null; then
	echo "test: starting PostgreSQL"
	pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
	for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
fi
if ! pg_ready; then
	echo "test: PostgreSQL is unreachable at ${TEST_DATABASE_URL%%\?*}; set TEST_DATABASE_URL" >&2
	exit 1
fi

# Agent CLIs at pinned versions and the Dendrite homeserver of the Matrix tests;
# in CI their absence fails the end-to-end tests.
if [[ "${CI:-}" == "true" || "${THREADLINE_E2E:-}" == "1" ]]; then
	scripts/install-agents.sh
	scripts/install-dendrite.sh
	# Gitea for the forge and workspace tests, built once into a cache outside
	# the clone (minutes cold, instant after); separate lines so that a failed
	# build stops the script.
	GITEA_BIN="$(scripts/install-gitea.sh)"
	export GITEA_BIN
	# The shells the completion scripts are checked with, and buildah for
	# the image the release test builds (Debian packages, once).
	missing=()
	for tool in zsh fish buildah; do command -v "$tool" >/dev/null || missing+=("$tool"); done
	if [[ ${#missing[@]} -gt 0 && $(id -u) -eq 0 ]]; then
		echo "test: installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
	fi
	export THREADLINE_E2E=1
else
	[[ -x node_modules/.bin/claude ]] || echo "test: the agent CLIs are not installed (scripts/install-agents.sh); their end-to-end tests will skip"
	[[ -x .cache/dendrite/bin/dendrite ]] || echo "test: Dendrite is not installed (scripts/install-dendrite.sh); the Matrix tests will skip"
	[[ -n "${GITEA_BIN:-}" || -x "${THREADLINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/threadline-ci}/gitea-1.27.3/gitea" ]] || echo "test: Gitea is not installed (scripts/install-gitea.sh); the forge tests will skip"
fi

# Real LXD for the project-container tests (about 25 s from scratch, under 3 s
# once installed); it needs root. Without THREADLINE_LXD=1 those tests skip.
if [[ $(id -u) -eq 0 && ( "${CI:-}" == "true" || "${THREADLINE_LXD:-}" == "1" ) ]]; then
	trap 'scripts/ci-lxd-teardown.sh' EXIT
	scripts/ci-lxd-setup.sh
	export THREADLINE_LXD=1
fi

unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [[ -n "$unformatted" ]]; then
	echo "test: gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# Matrix end-to-end encryption needs mautrix's pure-Go Olm (goolm), chosen by a
# build tag: the suite runs tagged; untagged builds compile and refuse E2EE
# clearly, which the last line checks.
go vet ./...
go vet -tags goolm ./...
# staticcheck at the version pinned in go.mod (go tool).
go tool staticcheck -tags goolm ./...
# The isolation tests run agents as the real agent user (README "Isolation").
if [[ $(id -u) -eq 0 ]] && ! id -u threadline-agent >/dev/null 2>&1; then
	useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent
fi
go test -race -count=1 -tags goolm "$@" ./...
go test -race -count=1 -run TestEncryptionNeedsGoolm ./bot/matrix

# A short run of every fuzz target in the tree (its seed corpus plus a few
# seconds of new inputs; FUZZTIME=0 skips, e.g. FUZZTIME=60s for a longer run).
# About 2 minutes for the ~20 targets (most of it building them).
fuzztime="${FUZZTIME:-2s}"
if [[ "$fuzztime" != "0" ]]; then
	git grep -oE '^func Fuzz[A-Za-z0-9_]+\(' -- '*_test.go' |
		sed -E 's/^(.*)\/[^/]+:func (Fuzz[A-Za-z0-9_]+)\($/\1 \2/' | sort -u |
		while read -r pkg target; do
			echo "fuzz: ./$pkg $target ($fuzztime)"
			# Go 1.26's fuzz coordinator may report a bare "context deadline
			# exceeded" as -fuzztime ends on a loaded machine (go.dev/issue/75804,
			# fixed in 1.27): no input failed then. Retry such a run once; a real
			# finding writes its input ("Failing input written") and fails at once.
			for attempt in 1 2; do
				if out="$(go test -tags goolm -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$pkg" 2>&1)"; then
					echo "$out" | tail -1
					break
				fi
				echo "$out"
				if [[ $attempt == 2 ]] || grep -q "Failing input written" <<<"$out" || ! grep -q "context deadline exceeded" <<<"$out"; then
					exit 1
				fi
				echo "fuzz: $target: the fuzz engine's deadline race (no failing input), once more"
			done
		done
fi
