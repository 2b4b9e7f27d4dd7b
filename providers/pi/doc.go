// Package pi runs pi (@mariozechner/pi-coding-agent, verified with 0.73.1)
// in RPC mode: JSON lines on stdin/stdout, split on LF only.
//
//	pi --mode rpc [--session ID|PATH | --fork ID|PATH] [--model M] [--thinking E]
//	   [--tools read,grep,find,ls] [args...]
//
// with PI_OFFLINE=1, PI_TELEMETRY=0 and PI_SKIP_VERSION_CHECK=1 (DefaultEnv).
// A run writes {"type":"get_state"} (for the session) and {"type":"prompt",
// "message", "images"} at once, reads events until the run ends, then closes
// stdin (pi exits) and kills pi if it is still there after
// Options.StopGrace. Reference: ../../../shared/reference/acp-pi/PI.md
// and the package's docs/rpc.md.
//
// # Event mapping
//
//	stdout record                                agent.Event
//	response get_state (new session)             session.updated {session_id: the session file, model}
//	response prompt success:false                run.failed {pi refused the prompt: <error>}
//	response without id (parse, unknown command) system {subtype rpc_error}
//	message_update text_delta / thinking_delta   assistant.delta / reasoning.delta
//	message_update other kinds                   (none: framing)
//	message_end assistant                        usage summed; its text when nothing streamed
//	tool_execution_start                         tool.started {id, name, args, summary}
//	tool_execution_update (accumulated result)   tool.output {the new part}
//	tool_execution_end                           tool.completed {output ≤ 4 KiB, is_error}
//	auto_retry_start                             system {subtype api_retry}
//	auto_retry_end success / failure             system api_retry_end / run.failed {finalError}
//	compaction_start/_end, extension_error       system
//	extension_ui_request confirm/select/         interaction.requested (answered with
//	  input/editor                               extension_ui_response); others provider.native
//	agent_end, last assistant stopReason:
//	  stop                                       usage.updated, run.completed {text}
//	  aborted                                    run.interrupted
//	  length                                     run.failed (output token limit)
//	  error                                      run.failed {errorMessage}, unless an
//	                                             auto_retry_start follows within
//	                                             Options.RetryGrace (pi retries: not final)
//	  anything else                              run.failed
//	agent_start, turn_*, message_start, user and toolResult messages   (none)
//	anything else valid                          provider.native {bounded payload}
//
// # Approvals
//
// pi has no permission flow: its built-in tools run unasked. Only Approval
// accept gets every tool; any other policy, and plan mode, runs with the
// read-only allowlist --tools read,grep,find,ls (a system read_only_tools
// event says so). Extension dialogs are interactions; without a Responses
// channel the policy answers them (accept confirms, otherwise cancelled).
//
// # Cancellation
//
// A cancelled ctx writes {"type":"abort"} (and {"type":"abort_retry"} while pi
// waits to retry), waits up to Options.StopGrace for the agent_end
// (stopReason aborted → run.interrupted; pi answers the abort after it), then
// kills pi; Run returns nil.
//
// # Sessions
//
// The native session id is pi's session file (get_state.sessionFile; the
// session id when there is no file). A ResumeID is passed as --session: a
// path is checked first (pi silently starts a new session at a missing
// path) and returns agent.ErrSessionNotFound when it is gone; for an id pi
// prints "No session found matching '<id>'" (or, for a session of another
// cwd, "Session found in different project" and an interactive question that
// stdin answers no) and exits 1 without JSON, which also returns
// agent.ErrSessionNotFound, with no run.failed. Fork passes --fork.
// switch_session is not used: it reports success even for a missing file.
package pi
