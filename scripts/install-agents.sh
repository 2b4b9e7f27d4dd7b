#!/usr/bin/env bash
# Installs the pinned agent CLIs (package.json / package-lock.json at the repo root)
# into ./node_modules. Idempotent: `npm ci` always reproduces the lockfile exactly.
# The Claude Code binary ends up at node_modules/.bin/claude (a native ELF; the
# EBADENGINE warning about node>=22 is harmless).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

want_claude="$(node -p 'require("./package.json").dependencies["@anthropic-ai/claude-code"]')"
bin="node_modules/.bin/claude"

if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -q "^${want_claude} "; then
	echo "install-agents: claude ${want_claude} already installed"
	exit 0
fi

npm ci --no-audit --no-fund

# npm may skip the package's postinstall (allowScripts); it only swaps the
# bin/claude.exe placeholder for the platform binary, so run it if needed.
if ! "$bin" --version >/dev/null 2>&1; then
	node node_modules/@anthropic-ai/claude-code/install.cjs
fi

got="$("$bin" --version)"
case "$got" in
"${want_claude} "*) echo "install-agents: ${got}" ;;
*)
	echo "install-agents: expected claude ${want_claude}, got: ${got}" >&2
	exit 1
	;;
esac
