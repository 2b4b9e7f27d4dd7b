package agent

// ChatID names a chat: one platform thread (or console session) bound to an
// agent. A distinct type so that a chat id passed where a run id belongs (or
// the reverse) does not compile.
type ChatID string

// RunID names one run of a chat.
type RunID string

// InteractionID names an interaction (an approval or a question) within its
// run: the id the run's events and cards carry.
type InteractionID string
