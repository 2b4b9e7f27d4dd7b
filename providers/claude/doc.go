// Package claude runs Claude Code (pinned against 2.1.328) in print mode with
// stream-json input and output:
//
//	claude -p --input-format stream-json --output-format stream-json --verbose
//	       --include-partial-messages [--model=M] [--effort=E] [--resume ID [--fork-session]]
//	       [--permission-mode plan] [--permission-prompt-tool stdio] [args...]
//
// The prompt (with images as base64 blocks) is written to stdin as one user
// message. stdin stays open for control responses and the interrupt request
// and is closed after the result line, which makes the CLI exit.
//
// # Event mapping
//
//	stdout record                              agent.Event
//	system/init (new session_id or model)      session.updated {session_id, model} (a resumed
//	                                           session is reported once, for its model)
//	system/api_retry, permission_denied, other system {subtype, readable text}
//	system/status, system/thinking_tokens      (none: progress noise)
//	stream_event text_delta / thinking_delta   assistant.delta / reasoning.delta
//	stream_event framing, signature, input_json (none)
//	assistant text/thinking block              (none when its message streamed; else the delta)
//	assistant tool_use block                   tool.started {id, name, input, summary}
//	  TodoWrite (the whole list)               + plan.updated {items}
//	user tool_result                           tool.completed {output ≤ 4 KiB, is_error}
//	  of TaskCreate / TaskUpdate (succeeded)   + plan.updated (the task list kept by the parser)
//	user text ("[Request interrupted …]")      provider.native
//	control_request can_use_tool               interaction.requested (native id byte-exact)
//	control_cancel_request                     interaction.resolved {status: cancelled}
//	control_request other subtypes             provider.native + error reply to the CLI
//	result is_error=false                      usage.updated, run.completed {text: result}
//	result is_error=true                       usage.updated, run.failed {text} (run.interrupted
//	                                           after our interrupt or a deny+interrupt)
//	result "No conversation found …"           system session_not_found; Run returns ErrSessionNotFound
//	anything else valid                        provider.native {bounded payload}
//	malformed JSON                             parse error: logged and skipped
//
// Open interactions resolve as turn_ended when the result arrives. The
// result's is_error, not its subtype, decides success (an API error reports
// subtype "success"). A CLI that exits without a result fails the run.
//
// # Approvals
//
// --permission-prompt-tool stdio is always passed, so every permission prompt
// comes here: Bash → command_approval, Edit / Write / MultiEdit / NotebookEdit →
// file_change_approval with a diff summary, AskUserQuestion → question (answer =
// allow with updatedInput.answers keyed by question text), anything else →
// permission (AskUserQuestion's questions allow an answer of the user's own).
// With Approval ask and a Responses channel the user decides: allow, allow
// for the session (offered when the request carries permission_suggestions:
// the allow carries them as updatedPermissions, every destination narrowed
// to "session" and setMode suggestions dropped, so the same command is not
// asked again and no settings file is written; the provider remembers the
// granted rules per session in memory, so a later turn's request with the
// same suggested rules is approved for the session at once, By "session"),
// deny
// with a message, or deny with interrupt (cancel). Otherwise the provider
// answers by policy at once (accept → allow, else deny), still emitting
// interaction.requested and .resolved (By "policy") so the answer is on record.
// The CLI's bypassPermissions mode is not used: it refuses to run as root.
//
// # Cancellation
//
// A cancelled ctx sends {"type":"control_request","request_id":"int-N",
// "request":{"subtype":"interrupt"}}, waits up to Options.InterruptTimeout for
// the result, then kills the process group; the run ends with run.interrupted
// and Run returns nil.
package claude
