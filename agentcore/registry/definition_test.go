// Sanity checks over every built-in definition.

package registry

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// seedIDs are the adapters the spec requires as built-ins.
var seedIDs = []string{
	"claude", "codex", "minimax", "opencode", "gemini", "qwen", "kimi", "kiro", "kilo", "devin",
	"hermes", "vibe", "reasonix", "vela", "trae", "pi", "antigravity", "aider", "grok", "deepseek",
	"atomcode", "cursor-agent", "mimo", "copilot", "qoder",
}

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func TestBuiltinsSanity(t *testing.T) {
	defs := Builtins()
	ids := map[string]bool{}
	for _, d := range defs {
		t.Run(d.ID, func(t *testing.T) {
			if !idPattern.MatchString(d.ID) {
				t.Errorf("id %q is not a lowercase slug", d.ID)
			}
			if ids[d.ID] {
				t.Errorf("duplicate id %q", d.ID)
			}
			ids[d.ID] = true
			if d.Name == "" || d.Executable == "" {
				t.Errorf("name %q, executable %q: both required", d.Name, d.Executable)
			}
			if d.Base != "" || d.Bin != "" || len(d.ConfigModels) > 0 || len(d.Args.Extra) > 0 {
				t.Errorf("a built-in carries profile fields: %+v", d)
			}
			if !strings.ContainsAny(d.InstallHint, " /") {
				t.Errorf("install hint %q is not actionable", d.InstallHint)
			}
			if !slices.Contains(Formats, d.Format) {
				t.Errorf("unknown format %q", d.Format)
			}
			if (d.Format == FormatJSONEvents) != (d.Dialect != "") {
				t.Errorf("format %q with dialect %q: json-events needs a dialect, others none", d.Format, d.Dialect)
			}
			if d.Format == FormatJSONEvents && !slices.Contains([]string{DialectOpenCode, DialectCursorAgent, DialectMimo, DialectCopilot, DialectQoder}, d.Dialect) {
				t.Errorf("unknown dialect %q", d.Dialect)
			}
			switch d.Resume {
			case ResumeNone, ResumeCLIFlag, ResumeProtocol, ResumeSnapshot:
			default:
				t.Errorf("unknown resume mechanism %q", d.Resume)
			}
			if d.NativeFork && d.Resume == ResumeNone {
				t.Error("native fork without resume")
			}
			if d.Resume == ResumeCLIFlag && d.Args.Resume == "" {
				t.Error("cli-flag resume needs Args.Resume")
			}
			if d.NativeFork && d.Resume == ResumeCLIFlag && d.Args.Fork == "" {
				t.Error("native fork over a cli flag needs Args.Fork")
			}
			switch d.Prompt {
			case DeliverStdin, DeliverProtocol, DeliverArgv:
			case DeliverFile:
				if d.Args.PromptFile == "" {
					t.Error("file delivery needs Args.PromptFile")
				}
			default:
				t.Errorf("unknown prompt delivery %q", d.Prompt)
			}
			switch d.PromptFallback {
			case "":
			case DeliverStdin:
			case DeliverFile:
				if d.Args.PromptFile == "" {
					t.Error("file fallback needs Args.PromptFile")
				}
			default:
				t.Errorf("prompt fallback %q: only stdin or file", d.PromptFallback)
			}
			if d.PromptFallback != "" && d.Prompt != DeliverArgv {
				t.Error("a prompt fallback only makes sense for argv delivery")
			}
			if (d.Format == FormatACP || d.Format == FormatPiRPC || d.Format == FormatCodexAppServer) && d.Prompt != DeliverProtocol {
				t.Errorf("%s sends the prompt in its protocol, not %q", d.Format, d.Prompt)
			}
			switch d.Skills {
			case SkillsNone, SkillsSlash, SkillsDollar, SkillsInstructions:
			default:
				t.Errorf("unknown skills strategy %q", d.Skills)
			}
			for _, v := range d.VerifiedVersions {
				if got := matchVersion(DefaultVersionPattern, v); got != v {
					t.Errorf("verified version %q does not parse as itself (%q)", v, got)
				}
			}
			for _, k := range d.Auth.Env {
				if !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(k) {
					t.Errorf("auth env %q is not a variable name", k)
				}
			}
			for _, f := range d.Auth.Files {
				if !strings.HasPrefix(f, "~/") && !strings.HasPrefix(f, "${") {
					t.Errorf("auth file %q must start with ~/ or ${VAR}", f)
				}
			}
		})
	}
	for _, id := range seedIDs {
		if !ids[id] {
			t.Errorf("seed adapter %q has no built-in definition", id)
		}
	}
	if !slices.IsSortedFunc(defs, func(a, b Definition) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("Builtins is not sorted by id")
	}
}

func TestBuiltinsAreFreshCopies(t *testing.T) {
	a := Builtins()
	for i := range a {
		a[i].Fallbacks = append(a[i].Fallbacks, "mutated")
		a[i].Args.Base = append(a[i].Args.Base, "mutated")
		a[i].Models.Fallback = append(a[i].Models.Fallback, "mutated")
	}
	for _, d := range Builtins() {
		if slices.Contains(d.Fallbacks, "mutated") || slices.Contains(d.Args.Base, "mutated") || slices.Contains(d.Models.Fallback, "mutated") {
			t.Fatalf("%s: a caller's change leaked into the table", d.ID)
		}
	}
	// Clones of derived built-ins must not share slices with their source.
	mimo, _ := Lookup("mimo")
	oc, _ := Lookup("opencode")
	mimo.Args.Base[0] = "mutated"
	if oc.Args.Base[0] == "mutated" {
		t.Fatal("mimo shares its args with opencode")
	}
}

func TestSpecificBuiltins(t *testing.T) {
	for _, tc := range []struct {
		id      string
		format  StreamFormat
		dialect string
		fork    bool
		prompt  PromptDelivery
	}{
		{"claude", FormatClaudeStreamJSON, "", true, DeliverProtocol},
		{"codex", FormatCodexAppServer, "", true, DeliverProtocol},
		{"kimi", FormatKimiStreamJSON, "", false, DeliverArgv},
		{"opencode", FormatACP, "", false, DeliverProtocol},
		{"opencode-run", FormatJSONEvents, DialectOpenCode, true, DeliverStdin},
		{"cursor-agent", FormatJSONEvents, DialectCursorAgent, false, DeliverStdin},
		{"antigravity", FormatPlain, "", false, DeliverArgv},
		{"atomcode", FormatPlain, "", false, DeliverFile},
		{"pi", FormatPiRPC, "", true, DeliverProtocol},
		{"gemini", FormatACP, "", false, DeliverProtocol},
	} {
		d, ok := Lookup(tc.id)
		if !ok {
			t.Fatalf("no %s", tc.id)
		}
		if d.Format != tc.format || d.Dialect != tc.dialect || d.NativeFork != tc.fork || d.Prompt != tc.prompt {
			t.Errorf("%s = format %s/%s fork %v prompt %s; want %s/%s %v %s", tc.id, d.Format, d.Dialect, d.NativeFork, d.Prompt, tc.format, tc.dialect, tc.fork, tc.prompt)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup found an unknown id")
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
