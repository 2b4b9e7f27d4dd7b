// Package acp is a generic client of the Agent Client Protocol (ACP v1,
// JSON-RPC 2.0 over stdio, one JSON object per line) and one agent.Provider
// per ACP agent CLI. A Definition names the CLI (id, executable, ACP-mode
// arguments, environment, install hint, how to wire it to a model, the
// versions it was verified with, its quirks); New(def, logger, Options) is
// the provider. The built-ins verified against the real CLI in CI
// (e2e_test.go, e2e_family_test.go) are opencode (`opencode acp`, 1.18.33),
// gemini (`gemini --acp`, 0.61.0), qwen (`qwen --acp`, 0.24.4), kilo (`kilo
// acp`, 7.7.7), copilot-acp (`copilot --acp`, 1.0.102), droid (`droid exec
// --output-format acp`, 0.225.2), codex-acp (Zed's, 0.16.0) and
// claude-agent-acp (Zed's, 0.23.1); kiro, devin, hermes, vibe, reasonix,
// vela and trae follow their docs. Each is made from its registry descriptor
// (descriptor.go); adding a CLI of this family is its Definition here and
// one row in cmd/threadline's wiring table.
//
// Schema: @agentclientprotocol/sdk 2.4.0 schema/v1/schema.json
// (https://agentclientprotocol.com). Observed behaviour of opencode, qwen
// and gemini: ../../../shared/reference/acp-pi/ACP.md; of the others:
// ../../../shared/reference/more-clis/CLIS.md.
//
// # Processes
//
// The child runs in its own process group, and every kill reaches the group.
// copilot's and codex-acp's npm wrappers run their platform binary with
// spawnSync and forward no signal, so Definition.Native launches the binary
// itself (NpmNative: the platform package next to the wrapper, as Node would
// find it; anything else on PATH is launched as it is). codex-acp and
// claude-agent-acp do not exit at stdin's end: their Definition.ExitTimeout
// (1 s from the end of the turn, a cancelled one too) ends the wait before
// the group is killed. Most of these CLIs start each shell command in a
// session of its own, outside the group: every run's child gets a
// procrun.RunToken in its environment, and once the run ended procrun.Sweep
// kills what still carries it (a tool left in the background). The e2e
// tests check that no process carrying the run's marker is left after a
// finished, declined or cancelled run, after a cancel while a tool runs, and
// after a turn that left a tool in the background.
//
// # One run
//
// Each Run starts the CLI in the run's working directory and speaks:
//
//	→ initialize {protocolVersion: 1, clientCapabilities: {fs: false, terminal: false}}
//	   (an answer with a protocolVersion outside KnownProtocolVersions fails the run)
//	→ session/new {cwd, mcpServers}             or, with RunRequest.ResumeID,
//	→ session/load {sessionId, cwd, mcpServers}  (history replayed as
//	   session/update is not emitted again; see Definition.LoadQuiet)
//	→ session/set_config_option | session/set_model   when RunRequest.Model is set
//	→ session/set_config_option | session/set_mode    "plan" for ModePlan
//	→ session/prompt {sessionId, prompt: [image…, text]}
//	← session/update … session/request_permission … ← the prompt answer {stopReason}
//
// then closes stdin (the agents exit) and kills the process if it is still
// there after Options.StopGrace. The run is a procrun.Session (the
// wire in session.go): the child is started with procrun.Start, so a relay
// in ctx and the host-agent isolation apply; the start deadline
// (Options.StartTimeout) and the replay-quiet window are Session timers; the
// duplicate-id rule, the turn_ended rule and the exit mapping are the
// Session's.
//
// # Event mapping
//
//	agent message                                  agent.Event
//	session/new answer (resumable agent)           session.updated {session_id, model}
//	session/new answer (otherwise)                 provider.native session/new
//	agent_message_chunk text                       assistant.delta
//	agent_thought_chunk text                       reasoning.delta
//	tool_call / tool_call_update                   tool.started (first status other than
//	                                               pending, or the permission request),
//	                                               tool.output (new content text),
//	                                               tool.completed (completed; failed = is_error)
//	plan                                           system {subtype plan, checklist text}
//	notice                                         system {subtype notice}
//	usage_update cost, prompt usage, qwen          usage.updated before the terminal event
//	  _meta.usage, gemini _meta.quota
//	available_commands_update, mode/config         provider.native {bounded payload}
//	  updates, user_message_chunk, unknown updates
//	session/request_permission                     interaction.requested (NativeID = the
//	                                               JSON-RPC id byte-exact; Options keep the
//	                                               ACP option ids, Kind = the decision)
//	the client's answer                            interaction.resolved
//	fs/read_text_file, fs/write_text_file          provider.native {path}; served inside the cwd
//	terminal/*, unknown requests                   provider.native; answered -32601
//	prompt answer stopReason end_turn              run.completed {text: the last answer}
//	  cancelled                                    run.interrupted
//	  max_tokens, max_turn_requests, refusal       run.failed (the reason spelled out)
//	  anything else                                run.failed (unknown stop reason)
//	prompt answer JSON-RPC error                   run.failed {text: message and data.details}
//	session/load error meaning "no such session"   system session_not_found; Run returns
//	                                               agent.ErrSessionNotFound (no run.failed)
//
// Open permission requests resolve as turn_ended when the prompt is answered
// (the agent gets the cancelled outcome); tools still running complete as
// errors. Updates after the prompt answer (qwen sends some) are dropped.
//
// # Permissions
//
// Options are picked by kind, never by id (the ids differ per agent and per
// tool). A response's OptionID wins; otherwise approve → allow_once,
// approve_session → allow_always, decline → reject_once (else reject_always,
// else the cancelled outcome), cancel → the cancelled outcome plus
// session/cancel (the turn stops). With Approval accept, or without a
// Responses channel, every request is answered at once by the policy
// (accept → allow_once, otherwise reject) and still emitted as requested plus
// resolved {by: "policy"}. Definitions make the agent ask through ACP: opencode
// and kilo get OPENCODE_CONFIG_CONTENT / KILO_CONFIG_CONTENT with "ask"
// permissions, qwen and gemini --approval-mode default (yolo under accept),
// codex-acp approval_policy "untrusted" ("never" under accept), copilot
// --allow-all-tools under accept only; droid and claude-agent-acp ask by
// default. codex-acp's only reject is "No, and tell Codex what to do
// differently": a decline ends its turn with stopReason cancelled
// (run.interrupted).
//
// The client declares no fs capability, but opencode 1.18.33 still delegates
// a permitted write to fs/write_text_file; DirFS serves fs/* for absolute
// paths inside the working directory (read-only when the policy denies).
//
// # Cancellation
//
// A cancelled ctx sends the session/cancel notification, answers every open
// permission request with {"outcome":{"outcome":"cancelled"}}, and waits up to
// Options.StopGrace for the prompt answer (stopReason cancelled →
// run.interrupted); then the process is killed and the run still ends with
// run.interrupted and Run returns nil. A cancel before the prompt was sent
// kills the agent at once.
//
// # Sessions
//
// A ResumeID is loaded with session/load when the definition allows it and
// the agent advertises loadSession. opencode loads from any cwd; qwen only
// from the session's own cwd (-32002 otherwise). Gemini CLI 0.61.0 is not
// resumed (Definition.Resume false): its session/load fails within the minute
// of the session's last start and deletes the history file on a second load,
// so gemini chats continue on the visible transcript. A Fork, or a ResumeID
// the agent cannot load, returns agent.ErrSessionNotFound before anything
// runs, which makes the core start a new session with the visible transcript.
package acp
