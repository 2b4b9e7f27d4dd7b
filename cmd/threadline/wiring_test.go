// The wiring table: every descriptor is valid and runnable as documented, and
// a run starts the executable detection reports (fallbacks included).

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// seedIDs are the adapters the spec requires as built-ins.
var seedIDs = []string{
	"claude", "codex", "minimax", "opencode", "gemini", "qwen", "kimi", "kiro", "kilo", "devin",
	"hermes", "vibe", "reasonix", "vela", "trae", "pi", "antigravity", "aider", "grok", "deepseek",
	"atomcode", "cursor-agent", "mimo", "copilot", "qoder",
}

func TestBuiltinTable(t *testing.T) {
	defs, err := builtinDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]registry.Definition{}
	for _, d := range defs {
		ids[d.ID] = d
	}
	for _, id := range seedIDs {
		if _, ok := ids[id]; !ok {
			t.Errorf("seed adapter %q has no built-in", id)
		}
	}
	for _, tc := range []struct {
		id      string
		format  registry.StreamFormat
		dialect string
		fork    bool
		prompt  registry.PromptDelivery
		resume  registry.ResumeMechanism
	}{
		{"claude", registry.FormatClaudeStreamJSON, "", true, registry.DeliverProtocol, registry.ResumeCLIFlag},
		{"codex", registry.FormatCodexAppServer, "", true, registry.DeliverProtocol, registry.ResumeProtocol},
		{"kimi", registry.FormatKimiStreamJSON, "", false, registry.DeliverArgv, registry.ResumeCLIFlag},
		{"opencode", registry.FormatACP, "", false, registry.DeliverProtocol, registry.ResumeProtocol},
		{"opencode-run", registry.FormatJSONEvents, registry.DialectOpenCode, true, registry.DeliverStdin, registry.ResumeCLIFlag},
		{"cursor-agent", registry.FormatJSONEvents, registry.DialectCursorAgent, false, registry.DeliverStdin, registry.ResumeCLIFlag},
		{"antigravity", registry.FormatPlain, "", false, registry.DeliverArgv, registry.ResumeSnapshot},
		{"atomcode", registry.FormatPlain, "", false, registry.DeliverFile, registry.ResumeNone},
		// pi resumes with --session, not over its protocol.
		{"pi", registry.FormatPiRPC, "", true, registry.DeliverProtocol, registry.ResumeCLIFlag},
		// gemini's session/load loses history: no resume.
		{"gemini", registry.FormatACP, "", false, registry.DeliverProtocol, registry.ResumeNone},
	} {
		d := ids[tc.id]
		if d.Format != tc.format || d.Dialect != tc.dialect || d.NativeFork != tc.fork || d.Prompt != tc.prompt || d.Resume != tc.resume {
			t.Errorf("%s = format %s/%s fork %v prompt %s resume %s; want %s/%s %v %s %s", tc.id, d.Format, d.Dialect, d.NativeFork, d.Prompt, d.Resume,
				tc.format, tc.dialect, tc.fork, tc.prompt, tc.resume)
		}
	}
	// Descriptors are fresh values: a caller's change never reaches the table.
	a := builtinTable()
	a[0].desc.Args.Base[0] = "mutated"
	if builtinTable()[0].desc.Args.Base[0] == "mutated" {
		t.Error("the table shares its descriptors")
	}
	for _, b := range builtinTable() {
		if b.new == nil {
			continue
		}
		if _, err := newBuiltinProvider(b, slog.New(slog.DiscardHandler)); err != nil {
			t.Errorf("%s: %v", b.desc.ID, err)
		}
	}
}

// argvRecord is what the fake CLI recorded of one start.
type argvRecord struct {
	args   []string
	stdin  string
	prompt string // the prompt file's content
}

// fakeCLI writes an executable named name into a fresh directory: it prints
// a version for --version; otherwise it records its arguments (one per
// line), the content of the file after promptFileFlag, and, when readStdin,
// its stdin, then prints body (a file of output lines, if any) and exits
// with code. The argv record is written last, so its presence means the run
// is over.
func fakeCLI(t *testing.T, name, promptFileFlag string, readStdin bool, body string, code int) (dir, rec string) {
	t.Helper()
	dir = t.TempDir()
	rec = filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '%s 1.18.33'; exit 0; fi\n", name)
	fmt.Fprintf(&sb, "d='%s'\n", rec)
	sb.WriteString("for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$d/argv.tmp\"\n")
	if promptFileFlag != "" {
		fmt.Fprintf(&sb, "prev=\nfor a in \"$@\"; do if [ \"$prev\" = '%s' ]; then cat \"$a\" > \"$d/prompt\"; fi; prev=$a; done\n", promptFileFlag)
	}
	if readStdin {
		sb.WriteString("cat > \"$d/stdin\"\n")
	}
	if body != "" {
		fmt.Fprintf(&sb, "cat '%s'\n", body)
	}
	fmt.Fprintf(&sb, "mv \"$d/argv.tmp\" \"$d/argv\"\nexit %d\n", code)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, rec
}

func readRecord(t *testing.T, rec string) (argvRecord, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rec, "argv"))
	if errors.Is(err, os.ErrNotExist) {
		return argvRecord{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	r := argvRecord{args: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
	if len(b) == 0 {
		r.args = nil
	}
	if s, err := os.ReadFile(filepath.Join(rec, "stdin")); err == nil {
		r.stdin = string(s)
	}
	if s, err := os.ReadFile(filepath.Join(rec, "prompt")); err == nil {
		r.prompt = string(s)
	}
	return r, true
}

// containsRun reports whether sub occurs in s as consecutive elements.
func containsRun(s, sub []string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// hasFlag reports whether args carry flag with value, as "flag value" or "flag=value".
func hasFlag(args []string, flag, value string) bool {
	return containsRun(args, []string{flag, value}) || slices.Contains(args, flag+"="+value)
}

// TestProviderArgvMatchesDescriptor starts every runnable built-in's
// provider (through the wiring, so on the executable Resolve finds) on a fake
// CLI that records its command line, and checks it against the descriptor:
// the base arguments, the model and effort flags, the resume and fork flags
// (or no session id on the command line when resume goes over the protocol),
// the accept-only flags, and the prompt delivery (argv, stdin, prompt file;
// a protocol prompt never on the command line).
func TestProviderArgvMatchesDescriptor(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // minimax writes its CODEX_HOME there
	t.Setenv("HOME", t.TempDir())
	const prompt = "threadline-probe-prompt"
	for _, b := range builtinTable() {
		if b.new == nil {
			continue
		}
		d := b.desc
		type variant struct {
			name string
			req  agent.RunRequest
		}
		model := "m1"
		if len(d.Models.Fallback) > 0 {
			model = d.Models.Fallback[0]
		}
		effort := ""
		if d.Caps.Effort {
			effort = "high"
			if len(d.Efforts) > 0 {
				effort = d.Efforts[len(d.Efforts)/2]
			}
		}
		variants := []variant{
			{"fresh-accept", agent.RunRequest{Prompt: prompt, Model: model, Effort: effort, Approval: agent.ApprovalAccept}},
			{"fresh-deny", agent.RunRequest{Prompt: prompt, Approval: agent.ApprovalDeny}},
		}
		if d.Resume != registry.ResumeNone {
			variants = append(variants, variant{"resume", agent.RunRequest{Prompt: prompt, ResumeID: "sess-42", Approval: agent.ApprovalDeny}})
		}
		if d.NativeFork {
			variants = append(variants, variant{"fork", agent.RunRequest{Prompt: prompt, ResumeID: "sess-42", Fork: true, Approval: agent.ApprovalDeny}})
		}
		for _, v := range variants {
			t.Run(d.ID+"/"+v.name, func(t *testing.T) {
				dir, rec := fakeCLI(t, d.Executable, d.Args.PromptFile, d.Prompt == registry.DeliverStdin || d.PromptFallback == registry.DeliverStdin, "", 3)
				t.Setenv("PATH", dir+":/usr/bin:/bin")
				p, err := newBuiltinProvider(b, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				req := v.req
				req.Cwd = t.TempDir()
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				_ = p.Run(ctx, req, func(agent.Event) {})
				r, ok := readRecord(t, rec)
				if !ok {
					t.Fatalf("the provider did not start %s from PATH", d.Executable)
				}
				checkArgv(t, d, req, r)
			})
		}
	}
}

// checkArgv compares one recorded start with what d documents.
func checkArgv(t *testing.T, d registry.Definition, req agent.RunRequest, r argvRecord) {
	t.Helper()
	if !containsRun(r.args, d.Args.Base) {
		t.Errorf("args %q lack the base %q", r.args, d.Args.Base)
	}
	if req.Model != "" {
		if d.Args.Model != "" && !hasFlag(r.args, d.Args.Model, req.Model) {
			t.Errorf("args %q lack model %s %s", r.args, d.Args.Model, req.Model)
		}
		if d.Args.Model == "" && slices.ContainsFunc(r.args, func(a string) bool { return strings.Contains(a, req.Model) }) {
			t.Errorf("args %q carry the model, which %s takes over its protocol", r.args, d.ID)
		}
	}
	if req.Effort != "" && d.Args.Effort != "" && !hasFlag(r.args, d.Args.Effort, req.Effort) {
		t.Errorf("args %q lack effort %s %s", r.args, d.Args.Effort, req.Effort)
	}
	accept := req.Approval == agent.ApprovalAccept
	if len(d.Args.Accept) > 0 && containsRun(r.args, d.Args.Accept) != accept {
		t.Errorf("args %q: accept-only %q present=%v under %s", r.args, d.Args.Accept, !accept, req.Approval)
	}
	id := req.ResumeID
	switch {
	case id == "":
		if d.Args.Resume != "" && slices.Contains(r.args, d.Args.Resume) {
			t.Errorf("fresh run with resume flag: %q", r.args)
		}
	case req.Fork && d.Args.Fork != "":
		// Fork by flag: either "--fork ID" or "--resume ID --fork".
		if !hasFlag(r.args, d.Args.Fork, id) && !(hasFlag(r.args, d.Args.Resume, id) && slices.Contains(r.args, d.Args.Fork)) {
			t.Errorf("fork args %q lack %s (with %s %s)", r.args, d.Args.Fork, d.Args.Resume, id)
		}
	case d.Resume == registry.ResumeCLIFlag || d.Resume == registry.ResumeSnapshot:
		if !hasFlag(r.args, d.Args.Resume, id) {
			t.Errorf("resume args %q lack %s %s", r.args, d.Args.Resume, id)
		}
	default: // over the protocol: the id never goes on the command line
		if slices.Contains(r.args, id) {
			t.Errorf("args %q carry the session id, which %s resumes over its protocol", r.args, d.ID)
		}
	}
	switch d.Prompt {
	case registry.DeliverArgv:
		want := []string{req.Prompt}
		if d.Args.Prompt != "" {
			want = []string{d.Args.Prompt, req.Prompt}
		}
		if !containsRun(r.args, want) {
			t.Errorf("argv prompt: args %q lack %q", r.args, want)
		}
	case registry.DeliverStdin:
		if !strings.Contains(r.stdin, req.Prompt) || slices.Contains(r.args, req.Prompt) {
			t.Errorf("stdin prompt: stdin %q, args %q", r.stdin, r.args)
		}
	case registry.DeliverFile:
		if r.prompt != req.Prompt || slices.Contains(r.args, req.Prompt) {
			t.Errorf("file prompt: file after %s holds %q, args %q", d.Args.PromptFile, r.prompt, r.args)
		}
	case registry.DeliverProtocol:
		if slices.ContainsFunc(r.args, func(a string) bool { return strings.Contains(a, req.Prompt) }) {
			t.Errorf("protocol prompt on the command line: %q", r.args)
		}
	}
}

// TestFallbackExecutableDetectedAndLaunched: with only opencode's fallback
// executable (opencode-cli) on PATH, `threadline agents` reports it for
// opencode-run and `threadline run --agent opencode-run` starts it.
func TestFallbackExecutableDetectedAndLaunched(t *testing.T) {
	golden, err := filepath.Abs("../../providers/jsonstream/testdata/opencode-text.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := isolate(t)
	bin, rec := fakeCLI(t, "opencode-cli", "", true, golden, 0)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("host: {isolation: off}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr, err := run(t, "", "agents", "--json", "--config", cfg)
	if code != 0 || err != nil {
		t.Fatalf("agents: %d %v\n%s", code, err, stderr)
	}
	var reports []registry.Report
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(bin, "opencode-cli")
	for _, r := range reports {
		if r.ID == "opencode-run" || r.ID == "opencode" {
			if r.Status == registry.StatusMissing || r.Path != want || r.Version != "1.18.33" {
				t.Errorf("%s: status %s path %q version %q, want the fallback %s", r.ID, r.Status, r.Path, r.Version, want)
			}
		}
	}
	code, out, stderr, err = run(t, "", "run", "--config", cfg, "--agent", "opencode-run", "hello fallback")
	if code != 0 || err != nil {
		t.Fatalf("run: %d %v\nstdout %s\nstderr %s", code, err, out, stderr)
	}
	if !strings.Contains(out, "Hello from the fake model.") {
		t.Errorf("run output %q", out)
	}
	r, ok := readRecord(t, rec)
	if !ok {
		t.Fatal("the run did not start the fallback executable")
	}
	if !containsRun(r.args, []string{"run", "--format", "json"}) || !strings.Contains(r.stdin, "hello fallback") {
		t.Errorf("fallback started with %q, stdin %q", r.args, r.stdin)
	}
}
