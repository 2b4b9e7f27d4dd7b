// Package worktrees gives each chat its own workspace on its own branch
// and ships its work: the chat's clone is made on its first run, each turn
// says what it changed, and the bot (never the agent) shows the diff,
// commits, checks and pushes the branch, opens its pull request, merges it
// and removes it.
//
// # Which chats get one
//
// A chat bound to a project that owns a repository (threadline project add
// --repo) works in a clone of the project's main clone; so does a loose
// chat whose working directory is itself a git repository (a channel's
// workdir), unless the channel turned worktrees off. Other chats keep their
// directory as before; a fork of such a chat gets a copy of its parent's
// own directory.
//
// # Layout
//
//	<root>/<project>/main          the project's main clone (agentcore/workspace.Clone)
//	<root>/<project>/chats/<chat>  a chat's clone, on threadline/<slug>-<8 hex of the chat id>
//	<root>/_dirs/<hash>/chats/<chat>  a chat's clone of a channel's repository
//
// The clones belong to the agent user and are worked on only through the
// chat's sandbox (Agents); the bot runs git only in main clones (see
// agentcore/workspace for the trust split).
//
// # Replicas and restarts
//
// The workspaces table holds each chat's clone: the first run claims the
// chat's row (store ClaimWorkspace), so two replicas never create two
// clones for one chat; the creator heartbeats its claim, another replica
// waits for it to be ready and takes it over when the creator died. A
// restart finds the ready row and goes on in the same clone.
//
// # A turn
//
// Before the provider runs, the chat's clone is made ready and becomes the
// run's working directory; a snapshot of its whole working state is taken.
// When the provider emits its terminal event, the turn's diff stat against
// that snapshot is emitted first as a system/workspace event (agent.Change),
// which the front-ends show in the answer's footer with the branch and the
// View diff / Push / Open PR actions.
//
// # Shipping
//
// Push commits what the agent left uncommitted (as the bot, with a
// Co-authored-by or Requested-by trailer), imports the branch into the main
// clone, checks the branch's whole diff with the push gates (agentcore/shipgate:
// no configured secret, no key or token pattern, no file over the size
// limit) and only then pushes it with the project's credential (the project
// secret GIT_TOKEN, else FORGE_TOKEN), which never reaches the agent. PR
// pushes and opens (or updates) the pull request on the project's forge
// (agentcore/forge) with FORGE_TOKEN. Merge lands the branch on its base
// without touching any checkout; a conflict is returned for the agent to
// resolve. Close removes the clone, refusing to lose unpushed work without
// discard. GC removes the clones of chats idle longer than Keep.
package worktrees
