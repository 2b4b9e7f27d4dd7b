// Session grants: what a user approved for the session outlives the CLI
// process of one turn.

package claude

import (
	"encoding/json"
	"slices"
	"sync"
)

// ByGrant is Resolution.By for a request answered by an earlier "approve
// for the session" in the same session.
const ByGrant = "session"

// maxGrantSessions bounds the sessions whose grants a Provider remembers.
const maxGrantSessions = 1024

// Grants are the allow rules ("Bash(mkdir -p out)") approved for the
// session. The CLI forgets a session-scoped rule when its process exits,
// and every turn is a new process: the next turn's request whose suggested
// allow rules were all granted already is approved for the session again
// without asking (By ByGrant).
type Grants map[string]bool

// allowRules returns the allow rules of permission suggestions, as
// "Tool(content)" (or "Tool" for a whole tool).
func allowRules(suggestions []json.RawMessage) []string {
	var out []string
	for _, s := range suggestions {
		var v struct {
			Type     string `json:"type"`
			Behavior string `json:"behavior"`
			Rules    []struct {
				ToolName    string  `json:"toolName"`
				RuleContent *string `json:"ruleContent"`
			} `json:"rules"`
		}
		if json.Unmarshal(s, &v) != nil || v.Type != "addRules" || v.Behavior != "allow" {
			continue
		}
		for _, r := range v.Rules {
			rule := r.ToolName
			if r.RuleContent != nil {
				rule += "(" + *r.RuleContent + ")"
			}
			out = append(out, rule)
		}
	}
	return out
}

// covers reports whether every rule was granted (and there is one).
func (g Grants) covers(rules []string) bool {
	if len(rules) == 0 {
		return false
	}
	for _, r := range rules {
		if !g[r] {
			return false
		}
	}
	return true
}

// grantStore keeps each session's Grants between runs, in memory: a restart
// forgets them, and the CLI asks again.
type grantStore struct {
	mu    sync.Mutex
	by    map[string]Grants
	order []string // oldest first
}

// get returns a copy of the session's grants (empty for "").
func (s *grantStore) get(session string) Grants {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Grants{}
	for r := range s.by[session] {
		out[r] = true
	}
	return out
}

// put records the session's grants; a forked session takes the parent's
// with it, since they came in its copy of the conversation.
func (s *grantStore) put(session string, g Grants) {
	if session == "" || len(g) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string]Grants{}
	}
	if _, ok := s.by[session]; ok {
		s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == session })
	}
	s.by[session] = g
	s.order = append(s.order, session)
	for len(s.order) > maxGrantSessions {
		delete(s.by, s.order[0])
		s.order = s.order[1:]
	}
}
