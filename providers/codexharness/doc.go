// Package codexharness drives the Codex App Server (`codex app-server`,
// verified with codex-cli 0.169.0) for any provider that speaks it: codex and
// minimax today. It never hard-codes Codex's identity: the provider id,
// label, executable, environment and CODEX_HOME come from Options.
//
// # One run
//
// Each Run is one procrun.Session over one app-server process, not tied to
// the run's ctx (cancellation is native); the harness is its wire (started
// with procrun.Start, so a relay in ctx and the host-agent isolation apply;
// the start deadline is a Session timer; the kill deadlines, the pending
// ledger and the exit mapping are the Session's):
//
//	→ initialize {clientInfo, capabilities:{experimentalApi:true}}   (id 1)
//	→ initialized
//	→ thread/start | thread/resume {threadId, excludeTurns} | thread/fork   (id 2)
//	   (cwd, approvalPolicy "untrusted", sandbox "workspace-write" by default;
//	   config: Options.Config and each RunRequest.MCPServers entry as
//	   mcp_servers.<name>.command/args/env, which codex starts for the thread)
//	→ turn/start {threadId, input, model, effort, collaborationMode}   (id 3)
//	   collaborationMode is "plan" for agent.ModePlan, else "default" (it is
//	   sticky on the thread, so it is always sent)
//	← notifications and server requests until turn/completed
//	→ stdin closed; the process exits
//
// Lines are classified by their keys (jsonrpc.Decode): method+id is a server
// request, method alone a notification, id+result|error a response. Ids stay
// json.RawMessage and are echoed byte for byte (the server's start at 0;
// 7 and "7" differ). Malformed lines are logged and skipped.
//
// # Event mapping (Parser)
//
//	notification                                agent.Event
//	thread/start|resume|fork result             session.updated {session_id, model} (a new
//	                                            id, or the model of the resumed thread)
//	turn/plan/updated                           plan.updated {title: explanation, items}
//	item/agentMessage/delta, item/plan/delta    assistant.delta
//	item/reasoning/summaryTextDelta, textDelta  reasoning.delta ("\n\n" between summary parts)
//	item/completed agentMessage|plan|reasoning  the missing suffix of the streamed text only
//	item/started commandExecution, fileChange,  tool.started {id = item id, name, input, summary}
//	  mcpToolCall, dynamicToolCall, webSearch,
//	  collabAgentToolCall (subagents)
//	item/commandExecution/outputDelta,          tool.output
//	  item/fileChange/outputDelta,
//	  item/mcpToolCall/progress
//	item/completed of those                     tool.completed {output ≤ 4 KiB, is_error}
//	thread/tokenUsage/updated (this turn)       usage.updated (sum of "last" over the turn)
//	error willRetry=true / false                system {subtype retrying / error}
//	warning, configWarning                      system {subtype warning}
//	model/rerouted                              system {subtype model_rerouted}
//	turn/completed completed                    run.completed {text: final agent message}
//	turn/completed failed                       run.failed; Run returns ErrRunFailed
//	turn/completed interrupted                  run.interrupted; Run returns nil
//	turn/completed other status                 run.failed (never a success)
//	anything else valid, or another thread's    provider.native {bounded payload}
//
// # Server requests (interactions)
//
//	method                                  kind                  answer (result)
//	item/commandExecution/requestApproval   command_approval      {"decision": accept|acceptForSession|decline|cancel}
//	item/fileChange/requestApproval         file_change_approval  same; the diff comes from the item/started with that itemId
//	item/tool/requestUserInput              question              {"answers": {id: {"answers": [text]}}}
//	mcpServer/elicitation/request           elicitation           {"action", "content", "_meta"}; MCP tool approvals
//	                                                              (_meta.codex_approval_kind) accept with content {} and
//	                                                              _meta {"persist":"session"} for approve_session
//	item/permissions/requestApproval        permission            {"permissions": asked|{}, "scope": turn|session}
//	item/tool/call                          tool_call             {"contentItems": [...], "success": bool}
//	execCommandApproval (legacy)            command_approval      {"decision": approved|approved_for_session|{"denied":{"rejection"}}|abort}
//	applyPatchApproval (legacy)             file_change_approval  same; the diff comes from its fileChanges
//	account/chatgptAuthTokens/refresh       unknown (a card)      declined at once: JSON-RPC error (Threadline holds no ChatGPT tokens)
//	attestation/generate                    unknown (a card)      declined at once: JSON-RPC error (no attestation)
//	currentTime/read                        (nobody asked)        {"currentTimeAt": unix seconds}, answered at once
//	anything else                           unknown               Answers["json"] as the result, or a JSON-RPC error
//
// An MCP form elicitation is a question (one agent.Question per schema
// property, in order: enums and oneOf titles are Options, arrays
// MultiSelect, fields not required Optional) answered with typed content;
// a URL elicitation or a form without fields is accepted with Approve.
// requestUserInput's isOther is Question.AllowOther; its autoResolutionMs is
// Interaction.AutoResolveAt, and an unanswered question is answered with no
// answers then (resolved timed_out by "agent"). An answer that cannot be
// encoded (not a number, not an option, a required field missing, invalid
// JSON) sends nothing: Respond returns ErrBadAnswer, the request stays
// pending and a system event (agent.SystemAnswerRefused) says why.
//
// Each request is emitted as interaction.requested (ID "rpc-<n>" or
// "rpc-s-<string>", NativeID the raw id). The matching InteractionResponse is
// answered with the method's exact shape and emitted as interaction.resolved
// (approved, approved_for_session, declined, cancelled, answered). A cancel
// on a request without a native cancel also interrupts the turn. Answers to
// unknown ids are logged and ignored. serverRequest/resolved for an
// unanswered request resolves it as cancelled by "agent"; requests still open
// at the turn's end resolve as turn_ended. A duplicate request id fails the
// run. Without a Responses channel (or with Approval accept/deny) the policy
// answers at once, By "policy": accept approves what can be approved
// (questions and forms are declined), anything else declines; nothing else
// ever answers on the user's behalf.
//
// # Cancellation and failures
//
// A cancelled ctx sends turn/interrupt once the turn id is known (once), and
// waits up to Options.StopGrace (10 s) for turn/completed, the only
// terminal authority; then the process is killed and the run ends with
// run.interrupted. A thread/resume or thread/fork error whose text says the
// thread does not exist ("no rollout found for thread id", "thread not
// found", "invalid session id", "thread not loaded") returns an error
// wrapping agent.ErrSessionNotFound and emits no terminal event. A process
// that dies mid-turn ends with run.failed carrying the stderr tail.
//
// # Discovery
//
// Discover runs its own short app-server session (model/list, paged, and
// collaborationMode/list), falls back to `<bin> debug models`, then to an
// Auto-only catalog, and caches the result per executable, CODEX_HOME,
// auth.json mtime and a fingerprint of the credential variables.
package codexharness
