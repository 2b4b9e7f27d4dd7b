#!/usr/bin/env bash
# Installs the forge the agentcore/forge tests open real pull requests on:
# Gitea at a pinned version, built from the Go module proxy (its go.mod has
# replace directives, so `go install …@version` cannot build it: the build runs
# inside the downloaded module), without the bindata tag, so options/ and
# templates/ are copied next to the binary:
#
#   ${THREADLINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/threadline-ci}/gitea-1.27.3/{gitea,options,templates}
#
# The cache is outside the repository so CI reruns keep it. Idempotent: a binary
# that reports the pinned version, with both directories beside it, is kept.
# Prints the binary's path (and nothing else) on stdout, so a caller can
#   export GITEA_BIN="$(scripts/install-gitea.sh)"
# The tests find it there (or at $GITEA_BIN); see agentcore/forge/giteatest and
# /work/shared/reference/forge/GITEA.md. A cold build takes about 3.5 minutes
# on two cores; a failed build fails the script.
set -euo pipefail

version="1.27.3"
module="code.gitea.io/gitea"
cache="${THREADLINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/threadline-ci}"
dir="$cache/gitea-$version"
bin="$dir/gitea"

log() { echo "install-gitea: $*" >&2; }

# installed reports whether the binary reports the pinned version and its
# options/ and templates/ are beside it.
installed() {
	[[ -x "$bin" && -d "$dir/options" && -d "$dir/templates" ]] &&
		"$bin" --version 2>/dev/null | grep -qiE "^gitea version ${version//./\\.}( |$)"
}

if installed; then
	log "gitea $version already in $dir"
	echo "$bin"
	exit 0
fi

log "downloading $module@v$version"
json="$(go mod download -json "$module@v$version")"
src="$(python3 -c 'import json,sys; d=json.load(sys.stdin); e=d.get("Error"); print(d["Dir"]) if not e else sys.exit(e)' <<<"$json")"
if [[ ! -f "$src/go.mod" ]]; then
	log "the module directory $src has no go.mod" >&2
	exit 1
fi

mkdir -p "$dir"
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

log "building gitea $version into $dir (a few minutes)"
# -X main.Version is what Gitea's Makefile sets: `gitea --version` and
# GET /api/v1/version then report the pinned version.
(cd "$src" && go build -trimpath -ldflags "-X main.Version=$version" -o "$tmp/gitea" .)
cp -r "$src/options" "$src/templates" "$tmp/"
chmod -R u+w,go+rX "$tmp"

# Replace the previous install, if any, part by part.
for part in options templates gitea; do
	chmod -R u+w "$dir/$part" 2>/dev/null || true
	rm -rf "$dir/$part"
	mv "$tmp/$part" "$dir/$part"
done

if ! installed; then
	log "$bin does not report gitea version $version after the build"
	exit 1
fi
log "gitea $version installed in $dir"
echo "$bin"
