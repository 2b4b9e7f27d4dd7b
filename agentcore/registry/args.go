// Arg rules: which models and efforts a chat may set for an agent, checked
// before a value is stored and long before it reaches a command line.

package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Errors of ArgRules. Each wraps agent.ErrInvalidArgValue, so a caller that
// only asks "was the value refused" checks that one.
var (
	// ErrUnknownModel: the agent declares a closed model list and the value
	// is not on it (or the agent takes no model at all).
	ErrUnknownModel = fmt.Errorf("%w: unknown model", agent.ErrInvalidArgValue)
	// ErrUnknownEffort: the agent declares its effort levels and the value is
	// not one of them, or the agent takes no effort.
	ErrUnknownEffort = fmt.Errorf("%w: unknown effort", agent.ErrInvalidArgValue)
)

// maxListed bounds how many valid values an error names.
const maxListed = 12

// ArgRules are the values a chat may set for one agent.
type ArgRules struct {
	// Models are the declared models (the operator's, the live listing or
	// the fallback list); FreeForm allows any valid id beyond them.
	Models   []string
	FreeForm bool
	// Effort says the agent takes an effort; Efforts are its levels (empty:
	// any valid value).
	Effort  bool
	Efforts []string
}

// ArgRules returns the rules of the agent whose probe report this is.
func (r Report) ArgRules() ArgRules {
	return ArgRules{Models: r.Models, FreeForm: r.ModelsFreeForm, Effort: r.Capabilities.Effort, Efforts: r.Efforts}
}

// StaticArgRules returns d's rules without running its CLI: the operator's
// models or the fallback list (see staticModels).
func StaticArgRules(d Definition) ArgRules {
	r := baseReport(d)
	r.Models, _ = staticModels(d)
	return r.ArgRules()
}

// CheckModel refuses a model the agent cannot take: any value that fails
// agent.ValidArgValue, and, where the list is closed, a value not on it. The
// empty model (the agent's default) is always valid. Errors name the valid
// models.
func (a ArgRules) CheckModel(v string) error {
	if v == "" {
		return nil
	}
	if err := agent.ValidArgValue(v); err != nil {
		return err
	}
	if slices.Contains(a.Models, v) || a.FreeForm {
		return nil
	}
	if len(a.Models) == 0 {
		return fmt.Errorf("%w %q: this agent takes no model setting", ErrUnknownModel, v)
	}
	return fmt.Errorf("%w %q (valid: %s)", ErrUnknownModel, v, listed(a.Models))
}

// CheckEffort refuses an effort the agent cannot take, like CheckModel. The
// empty effort (the agent's default) is always valid.
func (a ArgRules) CheckEffort(v string) error {
	if v == "" {
		return nil
	}
	if err := agent.ValidArgValue(v); err != nil {
		return err
	}
	switch {
	case !a.Effort:
		return fmt.Errorf("%w %q: this agent takes no effort setting", ErrUnknownEffort, v)
	case len(a.Efforts) == 0, slices.Contains(a.Efforts, v):
		return nil
	}
	return fmt.Errorf("%w %q (valid: %s)", ErrUnknownEffort, v, listed(a.Efforts))
}

// ValidModels describes the valid models for a message: the list, and
// whether other ids are accepted.
func (a ArgRules) ValidModels() string {
	switch {
	case len(a.Models) == 0 && a.FreeForm:
		return "any model id of letters, digits and . _ : / @ + - (not starting with -)"
	case len(a.Models) == 0:
		return "none (this agent takes no model setting)"
	case a.FreeForm:
		return listed(a.Models) + ", or another model id of letters, digits and . _ : / @ + -"
	}
	return listed(a.Models)
}

// ValidEfforts describes the valid efforts for a message.
func (a ArgRules) ValidEfforts() string {
	switch {
	case !a.Effort:
		return "none (this agent takes no effort setting)"
	case len(a.Efforts) == 0:
		return "any level of letters, digits and . _ : / @ + - (not starting with -)"
	}
	return listed(a.Efforts)
}

// listed joins at most maxListed values.
func listed(vs []string) string {
	if len(vs) <= maxListed {
		return strings.Join(vs, ", ")
	}
	return strings.Join(vs[:maxListed], ", ") + fmt.Sprintf(", … (%d more)", len(vs)-maxListed)
}
