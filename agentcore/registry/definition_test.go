// Validate and Builtins: what every descriptor a provider exports must hold.

package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateAcceptsTheTestSet(t *testing.T) {
	for _, d := range testBuiltins(t) {
		if err := Validate(d); err != nil {
			t.Errorf("%s: %v", d.ID, err)
		}
	}
}

// TestValidateRefuses: each rule of Validate refuses a definition that breaks it.
func TestValidateRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		id     string
		change func(*Definition)
		want   string
	}{
		"id":              {"claude", func(d *Definition) { d.ID = "Claude Code" }, "slug"},
		"executable":      {"claude", func(d *Definition) { d.Executable = "" }, "required"},
		"profile fields":  {"claude", func(d *Definition) { d.Bin = "/opt/claude" }, "profile fields"},
		"install hint":    {"claude", func(d *Definition) { d.InstallHint = "" }, "install hint"},
		"format":          {"claude", func(d *Definition) { d.Format = "xml" }, "unknown format"},
		"no dialect":      {"opencode", func(d *Definition) { d.Dialect = "" }, "needs a dialect"},
		"bad dialect":     {"opencode", func(d *Definition) { d.Dialect = "nosuch" }, "unknown dialect"},
		"resume":          {"claude", func(d *Definition) { d.Resume = "magic" }, "unknown resume"},
		"fork no resume":  {"codex", func(d *Definition) { d.Resume = ResumeNone }, "native fork without resume"},
		"flag no flag":    {"qoder", func(d *Definition) { d.Args.Resume = "" }, "Args.Resume"},
		"protocol flag":   {"codex", func(d *Definition) { d.Args.Resume = "--resume" }, "Args.Resume"},
		"fork flag":       {"claude", func(d *Definition) { d.Args.Fork = "" }, "needs Args.Fork"},
		"fork no fork":    {"qoder", func(d *Definition) { d.Args.Fork = "--fork" }, "without native fork"},
		"delivery":        {"qoder", func(d *Definition) { d.Prompt = "carrier-pigeon" }, "unknown prompt delivery"},
		"file flag":       {"qoder", func(d *Definition) { d.Prompt = DeliverFile }, "PromptFile"},
		"fallback":        {"qoder", func(d *Definition) { d.Prompt, d.PromptFallback = DeliverArgv, DeliverProtocol }, "only stdin or file"},
		"fallback argv":   {"qoder", func(d *Definition) { d.PromptFallback = DeliverStdin }, "only makes sense for argv"},
		"prompt flag":     {"qoder", func(d *Definition) { d.Args.Prompt = "-p" }, "without argv delivery"},
		"protocol prompt": {"codex", func(d *Definition) { d.Prompt = DeliverStdin }, "in its protocol"},
		"skills":          {"claude", func(d *Definition) { d.Skills = "psychic" }, "unknown skills"},
		"efforts":         {"claude", func(d *Definition) { d.Caps.Effort = false }, "Caps.Effort"},
		"model value":     {"claude", func(d *Definition) { d.Models.Fallback = []string{"--auto"} }, `"--auto"`},
		"verified":        {"claude", func(d *Definition) { d.VerifiedVersions = []string{"version 2.1"} }, "does not parse"},
		"auth env":        {"claude", func(d *Definition) { d.Auth.Env = []string{"api key"} }, "variable name"},
		"auth file":       {"claude", func(d *Definition) { d.Auth.Files = []string{"/etc/creds"} }, "must start with"},
	} {
		t.Run(name, func(t *testing.T) {
			d := testLookup(t, tc.id)
			tc.change(&d)
			err := Validate(d)
			if !errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidDefinition mentioning %q", err, tc.want)
			}
		})
	}
}

func TestBuiltinsSortsCopiesAndRefusesDuplicates(t *testing.T) {
	defs := testBuiltins(t)
	if !slices.IsSortedFunc(defs, func(a, b Definition) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("Builtins is not sorted by id")
	}
	src := testLookup(t, "opencode")
	out, err := Builtins(src)
	if err != nil {
		t.Fatal(err)
	}
	out[0].Fallbacks[0], out[0].Args.Base[0], out[0].Args.Accept[0] = "mutated", "mutated", "mutated"
	if src.Fallbacks[0] == "mutated" || src.Args.Base[0] == "mutated" || src.Args.Accept[0] == "mutated" {
		t.Fatal("Builtins returned a definition sharing slices with its descriptor")
	}
	// A derived descriptor (Clone) does not share slices with its source.
	mimo := src.Clone()
	mimo.Args.Base[0] = "mutated"
	if src.Args.Base[0] == "mutated" {
		t.Fatal("a clone shares its args with its source")
	}
	if _, err := Builtins(src, src); !errors.Is(err, ErrInvalidDefinition) || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("duplicate id: %v", err)
	}
	broken := src
	broken.Executable = ""
	if _, err := Builtins(broken); !errors.Is(err, ErrInvalidDefinition) {
		t.Errorf("invalid descriptor: %v", err)
	}
}

func TestModelParsers(t *testing.T) {
	if got := ParseLines("# header\nDefault model:\nalpha\n\nbeta\nalpha\nhas space\n"); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("ParseLines = %q", got)
	}
	if got := ParseSlashModels("opencode/big-pickle\nnot-a-model\nanthropic/claude-sonnet-4-5\n{\n"); !slices.Equal(got, []string{"opencode/big-pickle", "anthropic/claude-sonnet-4-5"}) {
		t.Errorf("ParseSlashModels = %q", got)
	}
	if got := ParseCursorModels("Available models\n\nauto - Auto\nsonnet-4 - Claude 4 Sonnet\ngpt-5\n"); !slices.Equal(got, []string{"auto", "sonnet-4", "gpt-5"}) {
		t.Errorf("ParseCursorModels = %q", got)
	}
	if got := ParseCursorModels("No models available for this account.\n"); got != nil {
		t.Errorf("ParseCursorModels(no models) = %q", got)
	}
}
