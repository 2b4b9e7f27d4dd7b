// Argv prompts: a prompt passed to the CLI as one command-line argument.

package procrun

import (
	"errors"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// DefaultArgvLimit keeps a prompt passed as one argument under Linux's
// 128 KiB per-argument limit; the wiring may pass registry.ArgvBudget
// instead.
const DefaultArgvLimit = 96 << 10

// ErrPromptTooLarge is returned (after run.failed, see StartError) when a
// CLI that only takes the prompt as an argument gets one that does not fit.
var ErrPromptTooLarge = errors.New("prompt too large for the command line")

// FitsArgv reports whether prompt can be one argument of at most limit
// bytes (a NUL byte would end it early).
func FitsArgv(prompt string, limit int) bool {
	return len(prompt) <= limit && !strings.ContainsRune(prompt, 0)
}

// PromptTooLarge is the error, wrapping ErrPromptTooLarge, of a prompt that
// does not fit argv for the CLI named name, which has no other way to take it.
func PromptTooLarge(name, prompt string, limit int) error {
	return fmt.Errorf("%w: %s takes the prompt as one argument and the prompt is %d bytes, but at most %d fit; shorten the prompt or use an agent that reads stdin",
		ErrPromptTooLarge, name, len(prompt), limit)
}

// StartError is what a provider's Run returns when building its command
// line failed with err: a prompt too large fails the run (run.failed with
// err's text, then err wrapped in agent.ErrRunFailed); any other err (an
// invalid request) is returned as it is, with no event.
func StartError(err error, emit func(agent.Event)) error {
	if !errors.Is(err, ErrPromptTooLarge) {
		return err
	}
	emit(agent.Event{Type: agent.EventRunFailed, Text: err.Error()})
	return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
}
