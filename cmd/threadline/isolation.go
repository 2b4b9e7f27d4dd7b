// Isolation of host agents from the bot: the option that turns it on (the
// policy is configs.HostConfig's, the mechanism agentcore/execution's and
// agentcore/sandbox's).

package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
	"github.com/threadline-bot/threadline/store"
)

var _ chatops.WorkFiles = (*app)(nil)

// withIsolation runs host agents as host says (the zero Host: unchanged);
// workRoot is the parent of the chats' own working directories
// (<workRoot>/<chat id>), which are handed to the agent user.
func withIsolation(host configs.Host, workRoot string) appOption {
	return func(o *appOptions) {
		o.isolation, o.sandboxed, o.workRoot = host.Iso, host.Sandbox, workRoot
	}
}

// sandboxHelper, when set, is the executable the sandbox helper runs from
// instead of this one (the tests' copy of their binary, see TestMain).
var sandboxHelper string

// sandboxHelperCommand is how a sandboxed start's helper is started: the
// small threadline-sandbox installed beside this executable (a few
// milliseconds less per start), else this executable's own sandbox
// subcommand.
func sandboxHelperCommand() ([]string, error) {
	exe, err := os.Executable()
	if sandboxHelper != "" {
		exe, err = sandboxHelper, nil
	}
	if err != nil {
		return nil, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, err
	}
	small := filepath.Join(filepath.Dir(exe), "threadline-sandbox")
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 && sandboxHelper == "" {
		return []string{small}, nil
	}
	return []string{exe, "sandbox"}, nil
}

// sandboxing is how the app's host runs are sandboxed (see
// execution.Sandboxing): the helper is this executable's `sandbox`, each
// chat's agent state lives under <data dir>/agents, and no run may reach
// the database files, the config file or the state directory (relays).
func sandboxing(cfg *configs.Config, agents *agentset.Set, iso *procrun.Isolation) (*execution.Sandboxing, error) {
	helper, err := sandboxHelperCommand()
	if err != nil {
		return nil, err
	}
	// The agents' state lives under the data directory, which the agent
	// user passes through; the state directory is the bot's (0700).
	if err := configs.PrivateDirs(iso != nil); err != nil {
		return nil, err
	}
	data, err := configs.DataDir()
	if err != nil {
		return nil, err
	}
	state, err := configs.StateDir()
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	s := &execution.Sandboxing{
		Helper:     helper,
		StateRoot:  filepath.Join(data, "agents"),
		Forbidden:  botPaths(cfg, state),
		Agents:     map[agent.ProviderID]execution.AgentState{},
		SharedHome: home,
	}
	// The thread tools' MCP server runs inside the sandbox, from wherever
	// it is installed (beside this executable: /usr/local/bin, ~/go/bin).
	if mcp, _ := threadToolsBinary(); mcp != "" {
		s.Tools = append(s.Tools, mcp)
	}
	for _, d := range agents.Defs {
		if d.Base != "" {
			continue
		}
		s.Agents[agent.ProviderID(d.ID)] = execution.AgentState{Spec: d.State, Auth: d.Auth.Files, Connect: cfg.Agents[d.ID].Sandbox.Connect}
	}
	return s, nil
}

// botPaths are the paths no agent may reach: the config and secret files,
// the SQLite database's files and the state directory (relays).
func botPaths(cfg *configs.Config, state string) []string {
	out := append(cfg.BotPaths(), state, configs.RelayDir())
	for _, f := range store.SQLiteFiles(cfg.Database.URL) {
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// CreateWorkFile answers chatops.WorkFiles for the front desk.
func (a *app) CreateWorkFile(dir, name string) (io.WriteCloser, error) {
	return a.files.CreateWorkFile(dir, name)
}
