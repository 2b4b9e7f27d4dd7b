#!/usr/bin/env bash
# Installs the pinned agent CLIs (package.json / package-lock.json at the repo root)
# into ./node_modules and checks that each answers --version with its pinned
# version. Idempotent: when every CLI already reports its pin, nothing is installed.
# The EBADENGINE warnings (some packages want node>=22) are harmless here.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# bin name → npm package
declare -A pkg=(
	[claude]=@anthropic-ai/claude-code
	[codex]=@openai/codex
	[opencode]=opencode-ai
	[gemini]=@google/gemini-cli
	[qwen]=@qwen-code/qwen-code
	[pi]=@mariozechner/pi-coding-agent
)

want() { node -p "require('./package.json').dependencies['$1']"; }

check() {
	local ok=0 b v got
	for b in "${!pkg[@]}"; do
		v="$(want "${pkg[$b]}")"
		got="$(timeout 60 "node_modules/.bin/$b" --version 2>&1 | head -1 || true)"
		if [[ "$got" != *"$v"* ]]; then
			[[ "${1:-}" == quiet ]] || echo "install-agents: $b: want $v, got '${got}'" >&2
			ok=1
		fi
	done
	return $ok
}

if check quiet; then
	echo "install-agents: all pinned agent CLIs already installed"
	exit 0
fi

# npm ci refuses this lock file (npm 11 records some optional platform packages
# of opencode and qwen without versions), so install from it with npm install.
npm install --no-audit --no-fund

# npm may skip Claude Code's postinstall; it only swaps the bin/claude.exe
# placeholder for the platform binary, so run it if needed.
if ! node_modules/.bin/claude --version >/dev/null 2>&1; then
	node node_modules/@anthropic-ai/claude-code/install.cjs
fi

check
for b in "${!pkg[@]}"; do echo "install-agents: $b $(node_modules/.bin/$b --version 2>&1 | head -1)"; done
