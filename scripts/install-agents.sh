#!/usr/bin/env bash
# Installs the pinned agent CLIs (package.json / package-lock.json at the repo root)
# into ./node_modules and checks that each is at its pinned version. Idempotent:
# when every CLI already checks out, nothing is installed.
# The EBADENGINE warnings (some packages want node>=22) and npm's "install scripts
# not yet covered by allowScripts" notes (kilo, droid: their JS shims still work)
# are harmless here.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# bin name → "npm package|how to check it":
#   version  the bin's --version output contains the package's pin
#   pkgjson  the installed package's package.json has the pin (for CLIs whose
#            --version prints nothing, an error, or another number)
declare -A pkg=(
	[claude]='@anthropic-ai/claude-code|version'
	[codex]='@openai/codex|version'
	[opencode]='opencode-ai|version'
	[gemini]='@google/gemini-cli|version'
	[qwen]='@qwen-code/qwen-code|version'
	[pi]='@mariozechner/pi-coding-agent|version'
	[kilo]='@kilocode/cli|version'
	[copilot]='@github/copilot|version'
	# droid's --version is its native binary's, pinned apart (the wrapper's own
	# platform package is not served here).
	[droid]='@factory/cli-linux-x64|version'
	# codex-acp rejects --version and claude-agent-acp prints nothing for it.
	[codex-acp]='@zed-industries/codex-acp|pkgjson'
	[claude-agent-acp]='@zed-industries/claude-agent-acp|pkgjson'
	[cn]='@continuedev/cli|version'
	# grok-cli 0.0.34 reports itself as 1.0.1.
	[grok]='@vibe-kit/grok-cli|pkgjson'
)

# Packages with no bin of their own that must be at their pin too: the wrapper
# of droid and the native binary that the codex-acp definition launches.
extra=(@factory/cli @zed-industries/codex-acp-linux-x64)

# The version checks run with the cache the e2e tests share: copilot unpacks
# 235 MB into $XDG_CACHE_HOME/copilot on its first start, once for them all.
cache="$root/.cache/agents-xdg"

want() { node -p "require('./package.json').dependencies['$1'] || require('./package-lock.json').packages['node_modules/$1'].version"; }
installed() { node -p "try { require('./node_modules/$1/package.json').version } catch (e) { 'missing' }"; }

check() {
	local ok=0 b p how v got
	for b in "${!pkg[@]}"; do
		p="${pkg[$b]%|*}" how="${pkg[$b]#*|}"
		v="$(want "$p")"
		if [[ ! -x "node_modules/.bin/$b" ]]; then
			got="no node_modules/.bin/$b"
		elif [[ "$how" == pkgjson ]]; then
			got="$(installed "$p")"
		else
			got="$(XDG_CACHE_HOME="$cache" timeout 60 "node_modules/.bin/$b" --version 2>&1 | head -1 || true)"
		fi
		if [[ "$got" != *"$v"* ]]; then
			[[ "${1:-}" == quiet ]] || echo "install-agents: $b: want $v, got '${got}'" >&2
			ok=1
		fi
	done
	for p in "${extra[@]}"; do
		v="$(want "$p")" got="$(installed "$p")"
		if [[ "$got" != "$v" ]]; then
			[[ "${1:-}" == quiet ]] || echo "install-agents: $p: want $v, got '${got}'" >&2
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
for b in "${!pkg[@]}"; do
	p="${pkg[$b]%|*}"
	if [[ "${pkg[$b]#*|}" == pkgjson ]]; then
		echo "install-agents: $b $(installed "$p") ($p package.json)"
	else
		echo "install-agents: $b $(XDG_CACHE_HOME="$cache" node_modules/.bin/$b --version 2>&1 | head -1)"
	fi
done
