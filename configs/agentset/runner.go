// Runners of built-ins (the provider that runs a descriptor, checked to be
// its own, launched on the executable detection reports) and the report of
// `threadline agents`.

package agentset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// ErrNoRunner marks a detected CLI that this build cannot run yet.
var ErrNoRunner = errors.New("no runner for this agent in this build")

// Runner builds the provider of descriptor d with newProvider (nil:
// ErrNoRunner), checks that it says it is d, and wraps it so that it runs
// what detection reports: a run with no operator bin and no container starts
// what registry.Resolve finds for d (its executable, else the first fallback
// on PATH), the same function `threadline agents`, doctor and /agents use. A
// container run keeps the provider's default, looked up inside the container.
func Runner(d registry.Definition, newProvider func(*slog.Logger) (agent.Provider, error), log *slog.Logger) (agent.Provider, error) {
	if newProvider == nil {
		return nil, fmt.Errorf("%w: %s (%s)", ErrNoRunner, d.ID, d.Format)
	}
	p, err := newProvider(log)
	if err != nil {
		return nil, err
	}
	if string(p.ID()) != d.ID {
		return nil, fmt.Errorf("agent %s: its provider says it is %s", d.ID, p.ID())
	}
	return resolved{Provider: p, def: d, lookPath: exec.LookPath}, nil
}

// resolved runs a provider on the executable registry.Resolve finds.
type resolved struct {
	agent.Provider
	def      registry.Definition
	lookPath func(string) (string, error)
}

// Run resolves the launch target, then runs the provider on it.
func (r resolved) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if req.Bin == "" && req.Container == nil {
		l, err := registry.Resolve(r.def, r.lookPath)
		if err != nil {
			return err
		}
		req.Bin = l.Path
	}
	return r.Provider.Run(ctx, req, emit)
}

// WriteReports prints reports as `threadline agents` does: the table of the
// installed agents (all: every agent), or every report as indented JSON.
func WriteReports(w io.Writer, reports []registry.Report, all, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	if !all {
		reports = slices.DeleteFunc(slices.Clone(reports), func(r registry.Report) bool { return r.Status == registry.StatusMissing })
		if len(reports) == 0 {
			_, err := fmt.Fprintln(w, "No agent CLI is installed. `threadline agents --all` lists the ones Threadline can run, with install commands.")
			return err
		}
	}
	out := registry.Table(reports)
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	_, err := io.WriteString(w, out)
	return err
}
