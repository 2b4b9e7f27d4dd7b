// Launch target resolution and prompt delivery within the command-line budget.

package registry

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Command-line limits.
const (
	// MaxArgStrlen is Linux's MAX_ARG_STRLEN: the longest single argument
	// (32 pages of 4 KiB), independent of ARG_MAX.
	MaxArgStrlen = 128 << 10
	// SafeArgMax is the total budget assumed where the platform's ARG_MAX
	// cannot be read (POSIX only promises 4 KiB, every supported Unix gives
	// at least 128 KiB).
	SafeArgMax = 128 << 10
	// argvReserve is kept free for the loader and any wrapper.
	argvReserve = 4 << 10
	// pointerBytes is what each argv/envp entry costs besides its bytes.
	pointerBytes = 8
)

// Launch is the executable a run of an adapter starts.
type Launch struct {
	// Path is the resolved executable.
	Path string
	// Name is the candidate that resolved (Bin, Executable or a fallback).
	Name string
	// Tried lists the candidates in the order they were looked up.
	Tried []string
}

// Resolve finds the launch target a run uses: the operator's Bin alone when
// set, else Executable, then each fallback, looked up with lookPath (nil
// means exec.LookPath). Detection and runs both call it, so what `threadline
// agents` reports is what a run starts. A miss returns an error wrapping
// agent.ErrNotInstalled that names the candidates and the install hint.
func Resolve(d Definition, lookPath func(string) (string, error)) (Launch, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	l := Launch{Tried: d.Candidates()}
	var lastErr error
	for _, c := range l.Tried {
		p, err := lookPath(c)
		if err == nil {
			l.Path, l.Name = p, c
			return l, nil
		}
		lastErr = err
	}
	quoted := make([]string, len(l.Tried))
	for i, c := range l.Tried {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	msg := fmt.Sprintf("%s (%s) was not found (looked for %s)", d.ID, d.Name, strings.Join(quoted, ", "))
	if d.InstallHint != "" {
		msg += ". Install it with: " + d.InstallHint
	}
	if lastErr == nil {
		lastErr = errors.New("no executable configured")
	}
	return l, fmt.Errorf("%w: %s: %w", agent.ErrNotInstalled, msg, lastErr)
}

// ArgvBudget returns how many bytes one more argument may have when the
// child is started with env and args (args include the executable). It is
// the smaller of MaxArgStrlen-1 and what ArgMax leaves after env, args and a
// reserve; it is never negative.
func ArgvBudget(env, args []string) int {
	used := argvReserve
	for _, s := range env {
		used += len(s) + 1 + pointerBytes
	}
	for _, s := range args {
		used += len(s) + 1 + pointerBytes
	}
	left := ArgMax() - used - 1 - pointerBytes
	return max(0, min(left, MaxArgStrlen-1))
}
