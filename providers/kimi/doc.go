// Package kimi runs Kimi Code CLI in print mode with its OpenAI-chat-shaped
// JSONL output:
//
//	kimi -p <prompt> --output-format stream-json [--model=M] [--session ID] [args...]
//
// A prompt longer than Options.ArgvLimit (or holding a NUL byte) is not put
// on the command line; it goes to stdin as one stream-json user message:
//
//	kimi --print --input-format stream-json --output-format stream-json [...]
//
// Format verified against the kimi-cli print-mode documentation (not a live
// capture: the CLI is not installed on the build machines).
//
// # Event mapping
//
//	stdout record                                 agent.Event
//	role=assistant, content string / text parts   assistant.delta (a blank line
//	                                              separates successive messages)
//	role=assistant, think parts                   reasoning.delta
//	role=assistant, tool_calls[]                  tool.started {id, name, input, summary}
//	role=tool, tool_call_id                       tool.completed {output ≤ 4 KiB}
//	role=meta, type=session.resume_hint           session.updated (new session_id), then
//	                                              run.completed: Kimi prints no other
//	                                              completion record
//	role=user                                     (none: the prompt echoed back)
//	other valid records                           provider.native {bounded payload}
//	malformed JSON                                parse error: logged and skipped
//
// Kimi prints no reasoning-effort, usage or failure record. A CLI that exits
// without the resume hint fails the run with its stderr tail.
//
// # Sessions and forks
//
// ResumeID becomes --session. Kimi has no native fork: a Fork request clears
// the resume id and the run starts a fresh session (the prompt service sends
// the visible history). Kimi silently starts a new session when the one asked
// for does not exist; when the hint then names another session the parser
// emits system {subtype: session_not_resumed} next to session.updated.
//
// # Cancellation
//
// A cancelled ctx sends SIGINT, waits Options.StopGrace, then kills the
// process group; the run ends with run.interrupted and Run returns nil.
package kimi
