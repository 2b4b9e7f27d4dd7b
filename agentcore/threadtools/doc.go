// Package threadtools is the bot's side of Threadline's per-run thread
// tools: what an agent calls to send a file from its workspace to the chat
// thread (send_file), to list the thread's attachments (thread_files) and
// to copy one into its workspace (fetch_thread_file).
//
// # How it fits
//
// For each run the bot starts a Server (Listen) on a unix socket at a path
// it chooses, inside what the run can reach (its workspace's parent, or a
// directory an LXD proxy device forwards into the container), with a fresh
// random token (NewToken). The agent's CLI is given Threadline's MCP server
// (cmd/threadline-mcp, a separate small binary speaking MCP over stdio) with
// THREADLINE_TOOLS_SOCKET and THREADLINE_TOOLS_TOKEN in its environment;
// the MCP server forwards each tool call to the socket with a Client. A
// unix socket because it is a file: a sandboxed agent reaches it (Landlock
// before ABI 9 does not restrict pathname sockets; from ABI 9 it sits under
// a path the policy grants), an LXD container reaches it through a proxy
// device, and file permissions decide who may connect: the socket is
// created mode 0600 and owned by the agent user (Config.UID, Config.GID),
// so only that user and root can. The token then ties a connection to this
// run: a request without it is refused and logged, without the token.
//
// The server knows no chat platform: it calls the Thread the caller gives
// (chatops, which uploads to Slack or Matrix) and reports every post and
// every refusal to the caller's callbacks (OnSent for the chat log and the
// audit, OnRefused so the person is told in one line).
//
// # Protocol
//
// One JSON request per line, one JSON response per line, in order; a
// connection may carry any number of requests. A request:
//
//	{"token":"…","op":"send_file","path":"out/chart.png","title":"Chart"}
//	{"token":"…","op":"thread_files"}
//	{"token":"…","op":"fetch_thread_file","name":"report.pdf"}
//
// A response holds "error" (a plain sentence for the agent, "refused: …"
// when a rule refused the request) or the result of the op: "sent"
// (name, title, size, sha256, mime_type, where, url), "files" (a list of
// name, size, mime_type, from, posted_at) or "fetched" (path, name, size,
// sha256). A request line is at most MaxRequestBytes. A wrong token is
// answered once with an error and the connection is closed.
//
// # Rules for send_file
//
// The server checks, before anything reaches the Thread:
//
//   - The path is relative to the run's workspace, or absolute inside it
//     (as the agent sees it: Config.AgentWorkspace). It is opened with
//     openat2(2) RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS from the workspace:
//     a link may be followed only while it stays beneath the workspace ("..",
//     an absolute link, /proc magic links are refused).
//   - It is a regular file (fstat(2)): no directory, device, FIFO or socket.
//     It is opened non-blocking, so a FIFO cannot hold the server.
//   - It is at most MaxBytes (DefaultMaxBytes, 50 MB), read through a limit:
//     a file growing while it is read is refused, never sent cut.
//   - Its content passes the push gate (agentcore/shipgate.Check): no
//     configured secret value (Config.Secrets, the bot's redactor) and no
//     private key or token of shipgate's Patterns, reported with the line.
//   - The posted name is the file's base name cleaned (CleanName): control
//     and formatting characters and path separators become "_".
//
// fetch_thread_file writes the attachment under its cleaned name into the
// workspace's top directory, opened beneath the workspace with O_EXCL (an
// existing name gets " (1)", " (2)", … before its extension), owned by the
// agent user, at most MaxBytes (a larger attachment leaves nothing), and
// returns the path written as the agent sees it.
//
// Nothing here logs file content or the token.
package threadtools
