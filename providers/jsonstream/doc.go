// Package jsonstream runs the agent CLIs whose print mode writes one JSON
// event per stdout line and (all but grok-cli) read the prompt from stdin: OpenCode
// (`opencode run --format json`, verified with 1.18.33), MiMo Code (an
// OpenCode derivative, same events), Kilo Code (`kilo run --format json`, an
// OpenCode fork, verified with 7.7.7), Cursor Agent (`--output-format
// stream-json`), GitHub Copilot CLI (`--output-format json`, verified with
// 1.0.102 over BYOK), Qoder CLI
// (`-p --output-format stream-json`) and grok-cli (@vibe-kit/grok-cli's
// headless `--prompt`, verified with 0.0.34). Each
// dialect has its own LineParser; the Provider runs it on a procrun.Session
// (procrun.OneShot). See Command for the exact command lines.
//
// Two families share their decoding: Cursor Agent and Qoder print Claude
// Code's stream-json records (streamjson.go: one record type, one
// decode-and-dispatch, the Messages API's content blocks), and grok-cli
// prints OpenAI-shaped chat messages (Chat, which providers/kimi parses
// Kimi's stream-json with too).
//
// Fixtures: testdata/opencode-*.jsonl are real captures of opencode 1.18.33
// against a scripted fake model in a loopback-only network namespace
// (THREADLINE_RECORD=1 go test -run TestRecordOpenCode re-records them,
// sanitized). The cursor-, copilot-, qoder- and mimo- fixtures are written
// from the CLIs' documented formats and published examples, not captured:
// those CLIs are not installable on the build machines. The grok-cli-
// fixtures are the real grok-cli's output against the scripted fake (the
// e2e tests, grokcli_e2e_test.go, run it).
//
// # OpenCode / MiMo / Kilo
//
//	step_start (root session)            session.updated when the sessionID is new
//	text                                 assistant.delta (whole parts; a blank line
//	                                     separates successive parts)
//	reasoning (with --thinking)          reasoning.delta
//	tool_use, state pending/running      tool.started
//	tool_use, state completed/error      tool.started (once) + tool.completed {output ≤ 4 KiB,
//	                                     is_error on status error or a non-zero exit}
//	step_finish                          usage.updated (cumulative); reason "stop" → run.completed,
//	                                     "length" → system max_tokens + run.completed,
//	                                     "tool-calls" continues, any other reason is no end
//	error                                run.failed {name: message (HTTP status)}
//	events of child sessions (subagents) ignored, except errors (provider.native)
//
// OpenCode prints no completion record: the root session's final step_finish
// is the end. A process that exits without one fails the run.
//
// # Cursor Agent
//
//	system/init                          session.updated {session_id, model}
//	thinking/delta                       reasoning.delta
//	assistant with timestamp_ms          assistant.delta (a streamed delta, verbatim)
//	assistant without timestamp_ms, or   the turn's consolidated echo: only the part the
//	with model_call_id                   deltas missed is emitted (all of it without deltas)
//	tool_call/started                    tool.started {call_id, name from the *ToolCall key}
//	tool_call/completed                  tool.completed {result.success content/stdout,
//	                                     result.error → is_error}
//	result                               usage.updated, then run.completed {result} or
//	                                     run.failed (is_error, or a subtype other than success)
//
// # Copilot
//
//	assistant.message_delta              assistant.delta
//	assistant.message                    assistant.delta only when its message had no deltas
//	assistant.reasoning_delta / .reasoning   reasoning.delta (the same rule)
//	assistant.usage                      usage.updated (cumulative)
//	tool.execution_start                 tool.started
//	tool.execution_partial_result        tool.output (the part not in the previous one: the
//	                                     real CLI repeats the output so far)
//	tool.execution_complete              tool.completed {result.content, success=false → is_error}
//	session.error                        system {subtype error}; its text becomes the failure
//	result                               session.updated (sessionId), then run.completed when
//	                                     exitCode is 0 (or success is true), else run.failed
//	session.*, user.message, turn marks, (none)
//	model.call_*, tool.shell_output
//
// # Qoder
//
//	system/init                          session.updated {session_id, model}
//	assistant text / thinking blocks     assistant.delta / reasoning.delta
//	assistant tool_use blocks            tool.started
//	user tool_result blocks              tool.completed
//	result                               usage.updated, run.completed or run.failed (is_error)
//
// # grok-cli
//
// Headless grok-cli prints nothing while it works: after the turn it prints
// the turn's messages in OpenAI's shape, one per line, and exits.
//
//	role user                            (none)
//	role assistant with tool_calls       assistant.delta (its content), tool.started per call
//	role tool                            tool.completed {content ≤ 4 KiB; grok-cli does not say
//	                                     whether the tool failed}
//	role assistant without tool_calls    held until the exit: exit 0 → assistant.delta +
//	                                     run.completed; "Sorry, I encountered an error: …" (its
//	                                     model-error reply, exit 0) or a non-zero exit → run.failed
//	no final message                     run.failed with the stderr tail (e.g. no API key)
//
// It keeps no session, and runs every tool without asking in this mode.
//
// In every dialect unknown valid records become provider.native (bounded
// payload) and malformed lines are logged and skipped.
//
// # Sessions, forks, cancellation
//
// ResumeID becomes the dialect's resume flag. Only OpenCode, MiMo and Kilo
// fork natively (-s ID --fork); for the others a Fork starts a fresh session. A
// cancelled ctx sends SIGINT, waits Options.StopGrace, then kills the process
// group; the run ends with run.interrupted and Run returns nil. Once the CLI
// exited (finished or cancelled) its process group is killed, then every
// process whose environment carries the run's random RunTokenEnv value
// (OpenCode and Kilo start each shell command in a session of its own, out
// of the group's reach; the e2e tests showed those outliving the run), so a
// tool it left in the background does not outlive the run. A process of
// another user whose environment cannot be read is not found that way.
package jsonstream
