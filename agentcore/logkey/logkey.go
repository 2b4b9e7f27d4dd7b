// Package logkey holds the one set of slog attribute keys the whole module
// logs with, so a chat, a run or an interaction is found under the same key
// in every layer's lines ("chat_id", never "chat" in one place and "chat_id"
// in another). It imports nothing, so every package may use it.
//
// Every key a log call names with a string literal must be one of this
// package's constants (TestKeysKnown parses the module and fails on any
// other); the constants that name things are meant to be used by name.
package logkey

// Keys that name a thing of the system: use them by name.
const (
	ChatID        = "chat_id"        // a chat's id
	RunID         = "run_id"         // a run's id
	InteractionID = "interaction_id" // an interaction's id (approval, question, ...)
	QueuedID      = "queued_id"      // a queued message's id
	SessionID     = "session_id"     // an agent's native session id
	ThreadID      = "thread_id"      // a platform thread (a Slack thread ts, a Matrix thread root)
	Place         = "place"          // a chatops place: platform, workspace, channel, thread
	Workspace     = "workspace"      // a Slack team or Matrix homeserver
	Platform      = "platform"       // "slack", "matrix", "console"
	Channel       = "channel"        // a Slack channel, a notification channel
	RoomID        = "room_id"        // a Matrix room
	EventID       = "event_id"       // a Matrix event
	MessageID     = "message_id"     // a platform message (a Slack ts, a Matrix event id of a message)
	DeviceID      = "device_id"      // a Matrix device
	User          = "user"           // a person, as chatops names them
	UserID        = "user_id"        // a platform user id
	Agent         = "agent"          // an agent (provider) id: "claude", "codex", ...
	Project       = "project"        // a project's name
	Container     = "container"      // an LXD container reference
	PID           = "pid"            // a process id
)

// Keys that many lines carry; a literal is fine ("err", err).
const (
	Err       = "err"       // an error
	Panic     = "panic"     // a recovered panic's value
	Stack     = "stack"     // the stack of a recovered panic (debug.Stack)
	Seq       = "seq"       // an event's sequence number in its chat
	AfterSeq  = "after_seq" // the seq a replay starts after
	Component = "component" // the part of the bot a line comes from
	What      = "what"      // what was being handled ("http /slack/events", ...)
)

// Keys of one line's detail; a literal is fine.
const (
	Action        = "action"
	Addr          = "addr"
	Args          = "args"
	Attempt       = "attempt"
	Bin           = "bin"
	BodyBytes     = "body_bytes"
	BotUser       = "bot_user"
	Button        = "button"
	By            = "by"
	Bytes         = "bytes"
	Card          = "card"
	CaughtUp      = "caught_up"
	Branch        = "branch" // a chat's git branch (agentcore/worktrees)
	Changed       = "changed"
	Chats         = "chats"
	Cmd           = "cmd"
	Code          = "code"
	Count         = "count"
	Deadline      = "deadline"
	Depth         = "depth"
	Dialect       = "dialect"
	Dir           = "dir"
	Duration      = "duration"
	Encrypted     = "encrypted"
	Encryption    = "encryption"
	Envelope      = "envelope"
	Events        = "events"
	Excerpt       = "excerpt"
	ExitCode      = "exit_code"
	ExitTimeout   = "exit_timeout"
	File          = "file"
	Files         = "files"
	ForkedFrom    = "forked_from"
	From          = "from"
	FrontEnds     = "front_ends"
	Host          = "host"
	HostPath      = "host_path"
	IdleTimeout   = "idle_timeout"
	Image         = "image"
	Images        = "images"
	Inviter       = "inviter"
	Key           = "key"
	Kind          = "kind"
	Line          = "line"
	Listen        = "listen"
	Max           = "max"
	MaxEventBytes = "max_event_bytes"
	Message       = "message"
	Method        = "method"
	Mode          = "mode"
	NeedsRestart  = "needs_restart"
	NewDirs       = "new_dirs"
	Owner         = "owner"
	Path          = "path"
	Persisted     = "persisted"
	PreviousOwner = "previous_owner"
	Queued        = "queued"
	Reattach      = "reattach"
	Relay         = "relay"
	RequestID     = "request_id" // a JSON-RPC request's id
	RetryIn       = "retry_in"
	Runs          = "runs"
	SavedDeviceID = "saved_device_id"
	Sender        = "sender"
	Serves        = "serves"
	Size          = "size"
	Slot          = "slot"
	Source        = "source"
	Starting      = "starting"
	Status        = "status"
	Stderr        = "stderr"
	Step          = "step"
	Suppressed    = "suppressed_writes"
	Team          = "team"
	Timeout       = "timeout"
	To            = "to"
	Took          = "took"
	Type          = "type"
	UID           = "uid"
	Version       = "version"
	Wait          = "wait"
	Waited        = "waited"
	Writes        = "writes"
)
