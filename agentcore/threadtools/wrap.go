// Wrap: the provider wrapper that gives each host run its thread tools.

package threadtools

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// ServerName is the MCP server's name: its tools are mcp__threadline__send_file, …
const ServerName = "threadline"

// The environment that names a run's socket and token to the MCP server
// (cmd/threadline-mcp reads and removes them).
const (
	EnvSocket = "THREADLINE_TOOLS_SOCKET"
	EnvToken  = "THREADLINE_TOOLS_TOKEN"
)

// The subtypes of the system events a run's log gets for each file sent or
// refused (the chat log keeps them; the audit reads them).
const (
	SubtypeFileSent    = "file_sent"
	SubtypeFileRefused = "file_refused"
)

// ChatThread is a chat's thread as a run's tools reach it: a Thread that
// can also say one line (a refusal) to the people in it.
type ChatThread interface {
	Thread
	Say(ctx context.Context, text string) error
}

// Tools is what Wrap needs.
type Tools struct {
	// Binary is the MCP server's executable (threadline-mcp); empty gives
	// no run its tools.
	Binary string
	// Thread returns the thread a chat is bound to; ok false: the chat has
	// none this process can post to, and its run goes on without tools.
	Thread func(ctx context.Context, chatID agent.ChatID) (ChatThread, bool)
	// Iso is the agents' isolation: the socket is theirs. Nil: the bot's.
	Iso *procrun.Isolation
	// Secrets are the configured secret values (send_file refuses a file
	// holding one).
	Secrets shipgate.Secrets
	// MaxBytes bounds a file; 0: DefaultMaxBytes.
	MaxBytes int64
	Logger   *slog.Logger
}

// toolsProvider gives a provider's runs their thread tools.
type toolsProvider struct {
	agent.Provider
	t Tools
}

// Wrap gives every host run of providers (Container nil, a chat id set, a
// thread found) its thread tools: a Server on a socket of the run's own and
// Threadline's MCP server in RunRequest.MCPServers, with the socket and a
// fresh token in its environment. The server closes when the run ends. Wrap
// it inside the sandboxing (execution.HostIsolated) so that it sees the
// run's final environment. The socket goes in a private directory of the
// bot under the system's temporary directory (see listen). Project runs in containers get no
// tools yet. Without a Binary, providers are returned unchanged.
func Wrap(providers []agent.Provider, t Tools) []agent.Provider {
	if t.Binary == "" || t.Thread == nil {
		return providers
	}
	if t.Logger == nil {
		t.Logger = slog.Default()
	}
	out := make([]agent.Provider, 0, len(providers))
	for _, p := range providers {
		out = append(out, &toolsProvider{Provider: p, t: t})
	}
	return out
}

// sayTimeout bounds telling the thread of a refusal; imageTimeout posting
// an image the agent made.
const (
	sayTimeout   = 10 * time.Second
	imageTimeout = time.Minute
)

// Run starts the run's server, adds the MCP server to req and runs the
// turn; the server closes when the turn ends.
func (p *toolsProvider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if req.Container != nil || req.ChatID == "" || req.Cwd == "" {
		return p.Provider.Run(ctx, req, emit)
	}
	th, ok := p.t.Thread(ctx, agent.ChatID(req.ChatID))
	if !ok {
		return p.Provider.Run(ctx, req, emit)
	}
	log := p.t.Logger.With(logkey.ChatID, req.ChatID, logkey.RunID, req.RunID)
	// The provider emits from its own goroutine, the server from its
	// connections': one lock keeps the events in one order.
	var mu sync.Mutex
	locked := func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(e)
	}
	srv, dir, err := p.listen(req, th, log, locked)
	if err != nil {
		log.Warn("thread tools: the run goes on without them", logkey.Err, err)
		return p.Provider.Run(ctx, req, emit)
	}
	// An image the agent made is posted where the provider reports it,
	// before its next event: the chat log gets the image event (its type
	// and size, never its bytes), then the file_sent or file_refused line.
	fromProvider := func(e agent.Event) {
		locked(e)
		if e.Type == agent.EventImage && e.Image != nil {
			pctx, cancel := context.WithTimeout(ctx, imageTimeout)
			defer cancel()
			_, _ = srv.PostImage(pctx, e.Image)
		}
	}
	defer func() {
		if err := srv.Close(); err != nil {
			log.Warn("thread tools: close", logkey.Err, err)
		}
		os.RemoveAll(dir)
	}()
	req.MCPServers = append(append([]agent.MCPServer(nil), req.MCPServers...), agent.MCPServer{
		Name: ServerName, Command: p.t.Binary,
		Env: []agent.EnvVar{{Key: EnvSocket, Value: srv.Socket()}, {Key: EnvToken, Value: srv.cfg.Token}},
	})
	return p.Provider.Run(ctx, req, fromProvider)
}

// listen starts the run's server on dir/s, dir a new directory of the bot
// (mode 0711: the agent passes through, cannot list or change it) in the
// bot's own temporary directory. Never under the run's TMPDIR: that belongs
// to the agent user, which could swap the new directory for a link between
// its creation and the bot's chmod and chown there (a root chmod of any
// file); in the system's sticky /tmp no other user can rename the bot's
// entries.
func (p *toolsProvider) listen(req agent.RunRequest, th ChatThread, log *slog.Logger, emit func(agent.Event)) (*Server, string, error) {
	dir, err := os.MkdirTemp("", "threadline-tools-")
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	uid, gid := -1, -1
	if p.t.Iso != nil {
		uid, gid = int(p.t.Iso.UID), int(p.t.Iso.GID)
	}
	srv, err := Listen(Config{
		Socket: filepath.Join(dir, "s"), UID: uid, GID: gid, Token: NewToken(),
		Workspace: req.Cwd, Thread: th, Secrets: p.t.Secrets, MaxBytes: p.t.MaxBytes, Logger: log,
		OnSent: func(s Sent) {
			emit(agent.Event{Type: agent.EventSystem, Subtype: SubtypeFileSent,
				Text: fmt.Sprintf("Sent %s to the thread (%s, sha256 %s)", s.Name, shipgate.HumanSize(s.Size), s.SHA256)})
		},
		OnRefused: func(name, reason string) {
			line := fmt.Sprintf("Not sent: %s (%s)", name, reason)
			emit(agent.Event{Type: agent.EventSystem, Subtype: SubtypeFileRefused, Text: line})
			ctx, cancel := context.WithTimeout(context.Background(), sayTimeout)
			defer cancel()
			if err := th.Say(ctx, line); err != nil {
				log.Warn("thread tools: tell the thread of a refusal", logkey.File, name, logkey.Err, err)
			}
		},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return srv, dir, nil
}
