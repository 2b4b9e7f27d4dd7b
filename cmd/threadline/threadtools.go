// Thread tools: each host run's MCP server (threadline-mcp) and the chat
// thread its send_file posts to (agentcore/threadtools, chatops.Desk.ToolThread).

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// mcpBinary, when set (tests), is the threadline-mcp runs are given
// instead of the one beside this executable.
var mcpBinary string

// threadToolsBinary is the threadline-mcp installed beside this executable
// (as threadline-sandbox is), "" when there is none; want says where it was
// looked for.
func threadToolsBinary() (path, want string) {
	if mcpBinary != "" {
		return mcpBinary, mcpBinary
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", "this executable's directory: " + err.Error()
	}
	p := filepath.Join(filepath.Dir(exe), "threadline-mcp")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p, p
	}
	return "", p
}

// othersCanRun returns nil when any user may run the file at path: it is
// executable by others and every directory above it is traversable by
// others. The agent user's CLI starts threadline-mcp: installed under a
// private home (go install as root: /root/go/bin) it cannot.
func othersCanRun(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("%s (mode %04o) may not be run by other users", path, fi.Mode().Perm())
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s (mode %04o), above %s, is not traversable by other users", d, fi.Mode().Perm(), path)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// runnableThreadTools is threadToolsBinary for runs as the agent user of
// iso: "" with the reason when that user could not start it (the runs go
// on without the thread tools rather than with a server that fails).
func runnableThreadTools(iso *procrun.Isolation) (path, problem string) {
	path, want := threadToolsBinary()
	if path == "" {
		return "", "threadline-mcp is not installed (" + want + ")"
	}
	if iso != nil {
		if err := othersCanRun(path); err != nil {
			return "", "the agent user " + iso.User + " cannot run threadline-mcp: " + err.Error() + "; install it where every user may run it (e.g. GOBIN=/usr/local/bin go install ./cmd/...)"
		}
	}
	return path, ""
}

// toolThreads finds a chat's thread for its run's tools, once the app is
// wired: the providers are wrapped before the front desk exists.
type toolThreads struct{ app atomic.Pointer[app] }

// thread is the thread chatID is bound to on the front desk.
func (t *toolThreads) thread(ctx context.Context, chatID agent.ChatID) (threadtools.ChatThread, bool) {
	a := t.app.Load()
	if a == nil {
		return nil, false
	}
	return a.desk().ToolThread(ctx, chatID)
}
