// Sandboxed starts: a host agent confined with Landlock (package sandbox)
// by a helper that the agent's own start goes through.

package procrun

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

// Sandbox confines a host start (package sandbox): the process starts as
// Helper (the bot's executable and its hidden "sandbox" subcommand, or a
// dedicated helper binary) with the Policy and the agent's command line;
// the helper confines itself, then executes the agent. The uid switch of an
// Isolation, when there is one, applies to the helper: the agent user runs
// it and cannot change it (CheckExecutable). A relayed start relays the
// helper's command line: the relay knows nothing of the sandbox.
type Sandbox struct {
	// Helper starts the helper; Helper[0] is an absolute path.
	Helper []string
	// Policy is what the agent and everything it starts may reach.
	Policy sandbox.Policy
}

type sandboxKey struct{}

// WithSandbox returns ctx carrying sb: Start confines host starts (a Spec
// without Container and without its own Sandbox) with it. A nil sb leaves
// ctx unchanged.
func WithSandbox(ctx context.Context, sb *Sandbox) context.Context {
	if sb == nil {
		return ctx
	}
	return context.WithValue(ctx, sandboxKey{}, sb)
}

// SandboxOf is the sandbox ctx carries (WithSandbox), or nil.
func SandboxOf(ctx context.Context) *Sandbox {
	sb, _ := ctx.Value(sandboxKey{}).(*Sandbox)
	return sb
}

// sandboxOf is the sandbox of spec's start: its own, else ctx's; never for
// a container run (the container confines it).
func sandboxOf(ctx context.Context, spec Spec) *Sandbox {
	if spec.Container != nil {
		return nil
	}
	if spec.Sandbox != nil {
		return spec.Sandbox
	}
	return SandboxOf(ctx)
}

// wrap returns l started through sb's helper. The agent user (iso, when
// set) runs the helper first, then the agent: it may change neither.
func (sb *Sandbox) wrap(l launch, iso *Isolation) (launch, error) {
	bin, err := filepath.Abs(l.path)
	if err != nil {
		return l, err
	}
	if err := checkExecutable(iso, bin); err != nil {
		return l, err
	}
	if err := checkExecutable(iso, sb.Helper[0]); err != nil {
		return l, fmt.Errorf("sandbox helper: %w", err)
	}
	p := sb.Policy
	for _, root := range InstallRoots(bin) {
		// A directory that holds a forbidden path (the CLI installed beside
		// the bot's config) is granted as the executable alone.
		if sandbox.Overlaps(sandbox.Policy{ReadOnly: []string{root}}, p.Forbidden) != nil {
			root = bin
		}
		p.ReadOnly = append(slices.Clip(p.ReadOnly), root)
	}
	path, argv, err := sandbox.Command(sb.Helper, p, bin, l.args)
	if err != nil {
		return l, err
	}
	l.path, l.args = path, argv[1:]
	return l, nil
}

// InstallRoots are the directories a sandboxed CLI started as bin reads and
// executes beside the system's: the directory bin is in and, following its
// symbolic links, the directory of the real file; for an npm package (a path
// through node_modules) the outermost node_modules directory instead of the
// latter, since the package loads its dependencies from there.
func InstallRoots(bin string) []string {
	out := []string{filepath.Dir(bin)}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return out
	}
	dir := filepath.Dir(real)
	if i := strings.Index(real, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
		dir = real[:i+len("/node_modules")]
	}
	if !slices.Contains(out, dir) {
		out = append(out, dir)
	}
	return out
}
