// Local profiles: operator-defined agents that inherit a built-in.

package registry

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Profile errors. Errors returned by Apply wrap one of these and read exactly
// like the config errors of `threadline` ("agents.<id>: ...").
var (
	// ErrReplacesBuiltin: a profile (an entry with a base) uses a built-in id.
	ErrReplacesBuiltin = errors.New("profile replaces a built-in agent")
	// ErrUnknownBase: the base (or, without a base, the id itself) is no built-in.
	ErrUnknownBase = errors.New("unknown base agent")
	// ErrInvalidProfile: the entry is malformed (empty id, base naming itself).
	ErrInvalidProfile = errors.New("invalid agent profile")
)

// Profile is one `agents.<id>` config entry. With Base it is a local profile
// inheriting that built-in; without Base it overrides the built-in of the
// same id.
type Profile struct {
	ID   string
	Base string
	Bin  string
	Args []string
	Env  map[string]string
	// PassEnv are host variables passed to this agent besides its
	// descriptor's (agents.<id>.pass_env).
	PassEnv []string
	Models  []string
}

// profileError keeps the exact config message while wrapping a sentinel.
type profileError struct {
	msg  string
	kind error
}

func (e *profileError) Error() string { return e.msg }
func (e *profileError) Unwrap() error { return e.kind }

// Apply returns builtins with every profile applied, sorted by id: an
// override entry changes its built-in in place, a local profile is appended
// as a new definition copied from its base. builtins is not modified.
//
// Messages (exact):
//
//	agents.<id>: a profile cannot replace the built-in agent <id>
//	agents.<id>: unknown agent "<base>" (known: <sorted built-in ids>)
//	agents.<id>: base must name another agent
func Apply(builtins []Definition, profiles []Profile) ([]Definition, error) {
	byID := make(map[string]int, len(builtins))
	out := make([]Definition, 0, len(builtins)+len(profiles))
	known := make([]string, 0, len(builtins))
	for _, d := range builtins {
		byID[d.ID] = len(out)
		out = append(out, d.clone())
		known = append(known, d.ID)
	}
	sort.Strings(known)
	sorted := append([]Profile(nil), profiles...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	seen := map[string]bool{}
	for _, p := range sorted {
		if p.ID == "" {
			return nil, &profileError{"agents: an agent id is empty", ErrInvalidProfile}
		}
		if seen[p.ID] {
			return nil, &profileError{fmt.Sprintf("agents.%s: defined twice", p.ID), ErrInvalidProfile}
		}
		seen[p.ID] = true
		if p.Base == p.ID {
			return nil, &profileError{fmt.Sprintf("agents.%s: base must name another agent", p.ID), ErrInvalidProfile}
		}
		_, isBuiltin := byID[p.ID]
		base := p.ID
		if p.Base != "" {
			if isBuiltin {
				return nil, &profileError{fmt.Sprintf("agents.%s: a profile cannot replace the built-in agent %s", p.ID, p.ID), ErrReplacesBuiltin}
			}
			base = p.Base
		}
		bi, ok := byID[base]
		if !ok || (p.Base != "" && out[bi].Base != "") {
			return nil, &profileError{fmt.Sprintf("agents.%s: unknown agent %q (known: %s)", p.ID, base, strings.Join(known, ", ")), ErrUnknownBase}
		}
		if p.Base == "" {
			out[bi] = override(out[bi], p)
			continue
		}
		d := override(out[bi].clone(), p)
		d.ID, d.Base = p.ID, base
		d.Name = fmt.Sprintf("%s (profile %s)", out[bi].Name, p.ID)
		byID[p.ID] = len(out)
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// override applies an entry's executable, args, env and models to d.
func override(d Definition, p Profile) Definition {
	if p.Bin != "" {
		d.Bin = p.Bin
	}
	if len(p.Args) > 0 {
		d.Args.Extra = append(append([]string(nil), d.Args.Extra...), p.Args...)
	}
	if len(p.Env) > 0 {
		env := make(map[string]string, len(d.Env)+len(p.Env))
		for k, v := range d.Env {
			env[k] = v
		}
		for k, v := range p.Env {
			env[k] = v
		}
		d.Env = env
	}
	if len(p.PassEnv) > 0 {
		d.PassEnv = append(append([]string(nil), d.PassEnv...), p.PassEnv...)
	}
	if len(p.Models) > 0 {
		d.ConfigModels = append([]string(nil), p.Models...)
	}
	return d
}
