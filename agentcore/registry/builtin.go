// Built-in definitions: the provider packages export one descriptor per CLI;
// this file validates and orders them, and holds the model-list parsers
// those descriptors share.

package registry

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// ErrInvalidDefinition marks a descriptor Validate or Builtins refuses.
var ErrInvalidDefinition = errors.New("invalid agent definition")

var (
	idPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	envName   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	dialects  = []string{DialectOpenCode, DialectCursorAgent, DialectMimo, DialectCopilot, DialectQoder, DialectGrokCLI, DialectKilo}
)

// Validate reports the first inconsistency of a built-in definition (an
// adapter a provider package exports): a malformed id, a missing executable
// or install hint, an unknown format, dialect, resume mechanism, prompt
// delivery or skills strategy, a resume, fork or prompt mechanism without
// its flag (or a flag without its mechanism), a declared model or effort
// that is no valid argument, profile fields set, or a missing Verified
// statement or one that lacks what its kind needs (see Verification).
func Validate(d Definition) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidDefinition, d.ID, fmt.Sprintf(format, a...))
	}
	switch {
	case !idPattern.MatchString(d.ID):
		return bad("id is not a lowercase slug")
	case d.Name == "" || d.Executable == "":
		return bad("name %q and executable %q are both required", d.Name, d.Executable)
	case d.Base != "" || d.Bin != "" || len(d.ConfigModels) > 0 || len(d.Args.Extra) > 0:
		return bad("a built-in carries profile fields (base, bin, config models or extra args)")
	case !strings.ContainsAny(d.InstallHint, " /"):
		return bad("install hint %q is not actionable", d.InstallHint)
	case !slices.Contains(Formats, d.Format):
		return bad("unknown format %q", d.Format)
	case (d.Format == FormatJSONEvents) != (d.Dialect != ""):
		return bad("format %q with dialect %q: json-events needs a dialect, others none", d.Format, d.Dialect)
	case d.Format == FormatJSONEvents && !slices.Contains(dialects, d.Dialect):
		return bad("unknown dialect %q", d.Dialect)
	case !slices.Contains([]ResumeMechanism{ResumeNone, ResumeCLIFlag, ResumeProtocol, ResumeSnapshot}, d.Resume):
		return bad("unknown resume mechanism %q", d.Resume)
	case d.NativeFork && d.Resume == ResumeNone:
		return bad("native fork without resume")
	case (d.Resume == ResumeCLIFlag || d.Resume == ResumeSnapshot) != (d.Args.Resume != ""):
		return bad("%s resume with Args.Resume %q: a flag goes with cli-flag and dir-snapshot resume only", d.Resume, d.Args.Resume)
	case d.NativeFork && d.Resume == ResumeCLIFlag && d.Args.Fork == "":
		return bad("native fork over a cli flag needs Args.Fork")
	case !d.NativeFork && d.Args.Fork != "":
		return bad("Args.Fork %q without native fork", d.Args.Fork)
	case !slices.Contains([]PromptDelivery{DeliverStdin, DeliverProtocol, DeliverArgv, DeliverFile}, d.Prompt):
		return bad("unknown prompt delivery %q", d.Prompt)
	case !slices.Contains([]PromptDelivery{"", DeliverStdin, DeliverFile}, d.PromptFallback):
		return bad("prompt fallback %q: only stdin or file", d.PromptFallback)
	case (d.Prompt == DeliverFile || d.PromptFallback == DeliverFile) != (d.Args.PromptFile != ""):
		return bad("file delivery and Args.PromptFile go together")
	case d.PromptFallback != "" && d.Prompt != DeliverArgv:
		return bad("a prompt fallback only makes sense for argv delivery")
	case d.Prompt != DeliverArgv && d.Args.Prompt != "":
		return bad("Args.Prompt %q without argv delivery", d.Args.Prompt)
	case (d.Format == FormatACP || d.Format == FormatPiRPC || d.Format == FormatCodexAppServer) && d.Prompt != DeliverProtocol:
		return bad("%s sends the prompt in its protocol, not %q", d.Format, d.Prompt)
	case !slices.Contains([]SkillStrategy{SkillsNone, SkillsSlash, SkillsDollar, SkillsInstructions}, d.Skills):
		return bad("unknown skills strategy %q", d.Skills)
	case len(d.Efforts) > 0 && !d.Caps.Effort:
		return bad("efforts without Caps.Effort")
	}
	if msg := validateVerified(d); msg != "" {
		return bad("%s", msg)
	}
	for _, v := range append(append([]string(nil), d.Models.Fallback...), d.Efforts...) {
		if err := agent.ValidArgValue(v); err != nil {
			return bad("declared value %q: %v", v, err)
		}
	}
	for _, v := range d.VerifiedVersions {
		if got := matchVersion(DefaultVersionPattern, v); got != v {
			return bad("verified version %q does not parse as itself (%q)", v, got)
		}
	}
	for _, k := range d.Auth.Env {
		if !envName.MatchString(k) {
			return bad("auth env %q is not a variable name", k)
		}
	}
	for _, k := range d.PassEnv {
		if !envName.MatchString(k) {
			return bad("pass env %q is not a variable name", k)
		}
	}
	for _, f := range d.Auth.Files {
		if !strings.HasPrefix(f, "~/") && !strings.HasPrefix(f, "${") {
			return bad("auth file %q must start with ~/ or ${VAR}", f)
		}
	}
	return nil
}

// Builtins validates descriptors (the provider packages' definitions, as the
// wiring lists them) and returns deep copies sorted by id. A duplicate id or
// a definition Validate refuses is an error.
func Builtins(descriptors ...Definition) ([]Definition, error) {
	out := make([]Definition, 0, len(descriptors))
	seen := map[string]bool{}
	for _, d := range descriptors {
		if err := Validate(d); err != nil {
			return nil, err
		}
		if seen[d.ID] {
			return nil, fmt.Errorf("%w: %s: defined twice", ErrInvalidDefinition, d.ID)
		}
		seen[d.ID] = true
		out = append(out, d.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ParseLines returns one model id per non-empty line, skipping comments,
// headers ending in ':' and lines with spaces or control characters;
// duplicates are dropped.
func ParseLines(stdout string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasSuffix(l, ":") || strings.ContainsFunc(l, notIDRune) || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

// notIDRune reports runes a model id never holds: spaces and controls.
func notIDRune(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

var slashModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)

// ParseSlashModels keeps lines shaped provider/model (OpenCode, MiMo).
func ParseSlashModels(stdout string) []string {
	var out []string
	for _, id := range ParseLines(stdout) {
		if slashModel.MatchString(id) {
			out = append(out, id)
		}
	}
	return out
}

var cursorModel = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._/:@-]*)(?:\s+-\s+.+)?$`)

// ParseCursorModels reads `cursor-agent models` ("id - Label" lines). "No
// models available" yields nothing.
func ParseCursorModels(stdout string) []string {
	if strings.Contains(strings.ToLower(stdout), "no models available") {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.EqualFold(l, "available models") || strings.EqualFold(l, "models") {
			continue
		}
		m := cursorModel.FindStringSubmatch(l)
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		out = append(out, m[1])
	}
	return out
}
