// The agent's side of the chats' workspaces (agentcore/worktrees.Agents):
// git in a chat's clone, the project's setup command and a fork's copy of
// its parent's directory, run as the agent user inside a sandbox confined to
// the chat's own directory.

package execution

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
	"github.com/threadline-bot/threadline/agentcore/workspace"
)

// Workspaces runs the agent's side of chats' workspaces as the agent user
// (Iso) in a sandbox (Sandbox) that may write only the chat's clone (and
// its state, for the setup) and read the system and the main clone. Both
// nil: as this process.
type Workspaces struct {
	Iso     *procrun.Isolation
	Sandbox *Sandboxing
}

// Hook returns the hook that runs a git command of dir's as the agent:
// its credential, and the sandbox helper in front of it.
func (w Workspaces) Hook(chatID, dir string, read []string) func(*exec.Cmd) {
	if w.Iso == nil && w.Sandbox == nil {
		return nil
	}
	return func(cmd *exec.Cmd) {
		if w.Sandbox != nil {
			if err := w.confine(cmd, []string{dir}, read, false); err != nil {
				// A command that cannot be confined must not run: point it at
				// nothing, so that it fails with the reason.
				cmd.Path, cmd.Args, cmd.Err = "/nonexistent", []string{"/nonexistent"}, err
				return
			}
		}
		w.credential(cmd)
	}
}

// confine rewrites cmd to start through the sandbox helper with a policy
// that may write rw, read read and the system, and (network) connect to
// 443 and 80.
func (w Workspaces) confine(cmd *exec.Cmd, rw, read []string, network bool) error {
	s := w.Sandbox
	p := sandbox.Policy{Devices: sandbox.SystemDevices(), Scope: true, Forbidden: s.Forbidden}
	for _, d := range rw {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		p.ReadWrite = append(p.ReadWrite, real)
	}
	ro, err := sandbox.Exclude(sandbox.SystemReadOnly(), s.Forbidden)
	if err != nil {
		return err
	}
	p.ReadOnly = append(ro, read...)
	if network {
		p.ConnectTCP, p.BindTCP = sandbox.DefaultConnectTCP(), []uint16{0}
	}
	if err := sandbox.Overlaps(p, s.Forbidden); err != nil {
		return err
	}
	bin := cmd.Path
	if !filepath.IsAbs(bin) {
		if bin, err = exec.LookPath(bin); err != nil {
			return err
		}
	}
	path, argv, err := sandbox.Command(s.Helper, p, bin, cmd.Args[1:])
	if err != nil {
		return err
	}
	cmd.Path, cmd.Args = path, argv
	return nil
}

// credential starts cmd as the agent user.
func (w Workspaces) credential(cmd *exec.Cmd) {
	if w.Iso == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: w.Iso.UID, Gid: w.Iso.GID, Groups: w.Iso.Groups}
}

// MakeDir makes dir, the agent user's (mode 0700).
func (w Workspaces) MakeDir(_ context.Context, dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if w.Iso == nil {
		return nil
	}
	d, err := openDirNoFollow(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Chown(int(w.Iso.UID), int(w.Iso.GID))
}

// RemoveDir empties dir as the agent (whose files they are), then removes
// the empty directory as this process.
func (w Workspaces) RemoveDir(ctx context.Context, dir string) error {
	if w.Iso == nil && w.Sandbox == nil {
		return os.RemoveAll(dir)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	cmd := exec.CommandContext(ctx, "find", dir, "-mindepth", "1", "-delete")
	if hook := w.Hook("", dir, nil); hook != nil {
		hook(cmd)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("empty %s: %w: %s", dir, err, procrun.StderrTail(string(out), 300))
	}
	return os.Remove(dir)
}

// Setup runs command with sh in dir as the agent of chatID, confined as
// the chat's runs are (its HOME and TMPDIR in its agent state, 443 and 80),
// at most limit; it returns the tail of the output.
func (w Workspaces) Setup(ctx context.Context, chatID, dir string, read []string, command string, limit time.Duration) (string, error) {
	env := []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	rw := []string{dir}
	if w.Sandbox != nil {
		shared := w.Sandbox.SharedHome
		if w.Iso != nil {
			shared = w.Iso.Home
		}
		st, err := PrepareState(w.Sandbox.StateRoot, chatID, emptyState, nil, nil, shared, w.Iso)
		if err != nil {
			return "", err
		}
		keys := make([]string, 0, len(st.Env))
		for k := range st.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+st.Env[k])
		}
		rw = append(rw, st.Dir)
	}
	hook := func(cmd *exec.Cmd) {
		if w.Sandbox != nil {
			if err := w.confine(cmd, rw, read, true); err != nil {
				cmd.Path, cmd.Args, cmd.Err = "/nonexistent", []string{"/nonexistent"}, err
				return
			}
		}
		w.credential(cmd)
	}
	return workspace.RunSetup(ctx, workspace.Setup{Dir: dir, Args: []string{"/bin/sh", "-c", command}, Env: env, Limit: limit, Cmd: hook})
}

// Copy copies from's content into to (a fork's new directory, handed to
// the agent user first) as the agent, which may read from and write to.
func (w Workspaces) Copy(ctx context.Context, _ string, from, to string) error {
	if w.Iso != nil {
		if err := PrepareWorkdir(filepath.Dir(to), to, w.Iso); err != nil {
			return err
		}
	}
	return w.copyAsAgent(ctx, from, to)
}

// copyAsAgent copies from's content into to as the agent, which may read
// from and write to only.
func (w Workspaces) copyAsAgent(ctx context.Context, from, to string) error {
	cmd := exec.CommandContext(ctx, "cp", "-a", "--no-preserve=ownership", from+"/.", to)
	if w.Sandbox != nil {
		if err := w.confine(cmd, []string{to}, []string{from}, false); err != nil {
			return err
		}
	}
	w.credential(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w: %s", from, err, procrun.StderrTail(string(out), 300))
	}
	return nil
}

// emptyState is the state of a setup command: no CLI's.
var emptyState registry.StateSpec
