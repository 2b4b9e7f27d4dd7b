// LineParser (the parser of a one-way line protocol, see LineWire) and
// the helpers every Session shares.

package procrun

import (
	"errors"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// LineParser turns one stdout line into normalized events. A returned error
// is logged and the line skipped.
type LineParser interface {
	Parse(line []byte) ([]agent.Event, error)
}

func nameOf(id agent.ProviderID, bin string) string {
	if id != "" {
		return string(id)
	}
	return bin
}

// IsExit reports whether err carries a *ProcessError and returns it.
func IsExit(err error) (*ProcessError, bool) {
	var pe *ProcessError
	ok := errors.As(err, &pe)
	return pe, ok
}
