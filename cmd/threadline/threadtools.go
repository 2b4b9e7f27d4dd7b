// Thread tools: each host run's MCP server (threadline-mcp) and the chat
// thread its send_file posts to (agentcore/threadtools, chatops.Desk.ToolThread).

package main

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/threadline-bot/threadline/agentcore/agent"
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
