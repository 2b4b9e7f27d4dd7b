// Package registry describes Threadline's agent CLI adapters declaratively
// and detects which are usable on this host.
//
// A Definition says everything the core needs to know about one adapter
// without running it: its executable and fallbacks, how to read its version
// (and which versions it was verified with), how to list its models, the
// inputs of its argument builder, how the prompt is delivered, which stream
// format its output is, how sessions resume and whether it forks natively,
// its capabilities, the skills strategy, what may be inspected for sign-in,
// and how to install it.
//
// A Definition is the one descriptor of a CLI. Each provider package exports
// the descriptors of the CLIs it runs (claude.Descriptor, acp.Descriptors,
// plain.Descriptor, ...), built from the same constants its command line
// uses; the wiring in cmd/threadline lists them in one table beside the
// provider constructors and passes them to Builtins, which validates them
// (Validate) and sorts them. Apply adds the operator's local profiles
// (agents.<id> entries with a base) and overrides (entries without one).
//
// The package imports only agentcore/agent and the standard library; it never
// imports a provider.
//
// # Launch target and prompt budget
//
// Resolve picks the executable a run starts: the operator's bin alone when
// configured, else the executable, then each fallback on PATH. Probe uses the
// same function, so detection reports what a run launches: the wiring runs
// every provider on Resolve's path. ArgvBudget is the longest argument a
// child may get (the smaller of Linux's 128 KiB per-argument limit and what
// ARG_MAX leaves after the environment and the other arguments); the wiring
// passes it to the providers that put the prompt on the command line, which
// switch to the adapter's declared fallback (stdin or a prompt file) or
// refuse a prompt that does not fit.
//
// # Detection
//
// Probe runs every definition concurrently: resolve, run the version probe
// under a timeout (its process group is killed on timeout), flag a version
// outside the verified set ("verified with X; found Y"), list models (a
// listing command or a protocol discoverer set by the wiring; on failure the
// fallback list, source "fallback"; profile models have source "config"), and
// check sign-in. A crash, a hang, a missing binary or a panicking parser only
// affects that adapter's Report. Results are cached in memory by (id, path,
// version, mtime) for a TTL (Cache).
//
// # Sign-in checks
//
// Detection never runs a CLI's login or status command and never reads a
// credential's contents: it reports variable names and file paths only.
// A key counts when it is in the agent's configured env, because the host
// environment is filtered before it reaches an agent; a key present only in
// the host environment is reported as a hint. Per CLI:
//
//	claude       ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN / CLAUDE_CODE_OAUTH_TOKEN;
//	             ${CLAUDE_CONFIG_DIR}/.credentials.json, ~/.claude/.credentials.json
//	             (macOS keychain logins are not visible)
//	codex        OPENAI_API_KEY; ${CODEX_HOME}/auth.json, ~/.codex/auth.json
//	minimax      MINIMAX_API_KEY
//	opencode     ${XDG_DATA_HOME}/opencode/auth.json, ~/.local/share/opencode/auth.json
//	gemini       GEMINI_API_KEY / GOOGLE_API_KEY / GOOGLE_APPLICATION_CREDENTIALS;
//	             ~/.gemini/oauth_creds.json
//	qwen         OPENAI_API_KEY / DASHSCOPE_API_KEY; ~/.qwen/oauth_creds.json
//	kimi         KIMI_API_KEY / MOONSHOT_API_KEY; ${KIMI_CODE_HOME}/config.toml,
//	             ~/.kimi-code/config.toml, ~/.kimi/config.toml, ~/.kimi/credentials
//	pi           provider keys; ~/.pi/agent/auth.json, ~/.pi/agent/models.json
//	hermes       XAI_API_KEY / OPENAI_API_KEY; ~/.hermes/.env, ~/.hermes/auth.json
//	vibe         MISTRAL_API_KEY; ~/.vibe/.env
//	reasonix     DEEPSEEK_API_KEY; ~/.reasonix/config.json
//	vela         VELA_RUNTIME_KEY
//	aider        provider keys; ~/.aider.conf.yml, ~/.env
//	grok         XAI_API_KEY; ~/.grok/auth.json
//	deepseek     DEEPSEEK_API_KEY; ~/.deepseek/config.toml
//	atomcode     ~/.atomcode/config.toml
//	cursor-agent CURSOR_API_KEY; ~/.config/cursor/auth.json, ~/.cursor/cli-config.json
//	copilot      COPILOT_GITHUB_TOKEN / GH_TOKEN / GITHUB_TOKEN; ~/.copilot/config.json
//	qoder        QODER_PERSONAL_ACCESS_TOKEN; ~/.qoder/.auth/user, ~/.qoder.json
//	amp          AMP_API_KEY; ~/.local/share/amp/secrets.json
//	codebuddy    CODEBUDDY_API_KEY; ~/.codebuddy/.credentials.json
//	antigravity, kiro, kilo, devin, trae, mimo: unknown (keyring or CLI-owned
//	             state); a run reports sign-in failures instead.
//
// A credentials file shows the CLI was set up, not that its token is still
// valid.
//
// # Skills
//
// ApplySkills prefixes a prompt with the selected skills per the adapter's
// SkillStrategy: slash-command triggers, $name mentions, or instructions
// pointing at each SKILL.md.
package registry
