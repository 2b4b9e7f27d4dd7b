// Values that reach an agent CLI's command line (model, effort, mode, agent,
// project, skill names): the one strict shape every such value must have.

package agent

import (
	"errors"
	"fmt"
)

// ErrInvalidArgValue is returned by ValidArgValue (and by providers, which
// check every value they put on a command line) for a value that could be
// read as a flag or that holds characters no id has. The caller tells the
// user which values are valid; retrying with the same value cannot help.
var ErrInvalidArgValue = errors.New("invalid value for an agent option")

// MaxArgValueBytes bounds a value passed to an agent CLI.
const MaxArgValueBytes = 200

// ValidArgValue reports whether v may be passed to an agent CLI as the value
// of one of its options: 1 to MaxArgValueBytes bytes of ASCII letters, digits
// and "._:/@+-", not starting with '-' (so that no parser reads it as a flag,
// e.g. opencode's "--auto"). Whitespace, control characters, '=' and every
// other byte are refused. The error wraps ErrInvalidArgValue and quotes v
// safely (control characters escaped).
func ValidArgValue(v string) error { return validValue(v, MaxArgValueBytes) }

// MaxSessionIDBytes bounds a session id passed back to an agent CLI. It is
// larger than MaxArgValueBytes because pi's session ids are the paths of its
// session files (under the agent's HOME, named after the chat's directory).
const MaxSessionIDBytes = 4096

// ValidSessionID reports whether v may be passed to an agent CLI as the
// session to resume (claude --resume, pi --session, the jsonstream dialects'
// resume flags): the shape ValidArgValue asks for, up to MaxSessionIDBytes.
// Every id the agents produce passes: UUIDs (Claude, Codex, Gemini, Cursor,
// Kimi), OpenCode's "ses_…", "session_…" and pi's absolute session file
// paths. The error wraps ErrInvalidArgValue.
func ValidSessionID(v string) error { return validValue(v, MaxSessionIDBytes) }

// validValue is ValidArgValue with a length bound.
func validValue(v string, maxBytes int) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: empty", ErrInvalidArgValue)
	case len(v) > maxBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidArgValue, len(v), maxBytes)
	case v[0] == '-':
		return fmt.Errorf("%w: %q starts with '-'", ErrInvalidArgValue, v)
	}
	for i := 0; i < len(v); i++ {
		if !argValueByte(v[i]) {
			return fmt.Errorf("%w: %q holds %q (allowed: letters, digits and . _ : / @ + -)", ErrInvalidArgValue, v, string(rune(v[i])))
		}
	}
	return nil
}

// argValueByte reports the bytes ValidArgValue accepts.
func argValueByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', ':', '/', '@', '+', '-':
		return true
	}
	return false
}

// CheckRunArgs checks the values of req that providers may put on a command
// line (Model, Effort) with ValidArgValue, ResumeID with ValidSessionID (it is
// passed as the argument after --resume or --session), and Mode against the
// known modes.
// Every provider calls it before it starts its CLI, whatever the caller
// checked before. The error wraps ErrInvalidArgValue and names the field.
func CheckRunArgs(req RunRequest) error {
	for _, f := range []struct{ name, v string }{{"model", req.Model}, {"effort", req.Effort}} {
		if f.v == "" {
			continue
		}
		if err := ValidArgValue(f.v); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if req.ResumeID != "" {
		if err := ValidSessionID(req.ResumeID); err != nil {
			return fmt.Errorf("resume id: %w", err)
		}
	}
	switch req.Mode {
	case "", ModeDefault, ModePlan:
		return nil
	}
	return fmt.Errorf("mode: %w: %q (valid: %s, %s)", ErrInvalidArgValue, string(req.Mode), ModeDefault, ModePlan)
}
