// Tests of ValidArgValue.

package agent

import (
	"errors"
	"strings"
	"testing"
)

func TestValidArgValue(t *testing.T) {
	t.Parallel()
	good := []string{"sonnet", "anthropic/claude-sonnet-4-5", "gpt-5.4-mini", "sonnet:high", "us.anthropic.claude@v1", "a+b", "x", strings.Repeat("m", MaxArgValueBytes)}
	for _, v := range good {
		if err := ValidArgValue(v); err != nil {
			t.Errorf("ValidArgValue(%q) = %v, want nil", v, err)
		}
	}
	bad := []string{"", "--auto", "-m", "-", "a b", "a\tb", "a\nb", "a\x00b", "a\x7fb", "--model=x", "x=y", "a;b", "$(id)", "a'b", "é", "model\u00a0x", strings.Repeat("m", MaxArgValueBytes+1)}
	for _, v := range bad {
		err := ValidArgValue(v)
		if !errors.Is(err, ErrInvalidArgValue) {
			t.Errorf("ValidArgValue(%q) = %v, want ErrInvalidArgValue", v, err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x00\n\t") {
			t.Errorf("ValidArgValue(%q): error %q carries a control character", v, err)
		}
	}
}

func FuzzValidArgValue(f *testing.F) {
	for _, s := range []string{"sonnet", "--auto", "a b", "anthropic/x", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if ValidArgValue(v) != nil {
			return
		}
		if v == "" || v[0] == '-' || len(v) > MaxArgValueBytes || strings.ContainsAny(v, " \t\r\n\x00=") {
			t.Fatalf("accepted %q", v)
		}
	})
}

func TestCheckRunArgs(t *testing.T) {
	t.Parallel()
	ok := []RunRequest{{}, {Model: "sonnet", Effort: "high", Mode: ModePlan}, {Mode: ModeDefault}}
	for _, r := range ok {
		if err := CheckRunArgs(r); err != nil {
			t.Errorf("CheckRunArgs(%+v) = %v", r, err)
		}
	}
	bad := map[string]RunRequest{
		"model":     {Model: "--auto"},
		"effort":    {Effort: "-x"},
		"mode":      {Mode: "--yolo"},
		"resume id": {ResumeID: "--dangerously-skip-permissions"},
	}
	for field, r := range bad {
		err := CheckRunArgs(r)
		if !errors.Is(err, ErrInvalidArgValue) || !strings.HasPrefix(err.Error(), field+": ") {
			t.Errorf("CheckRunArgs(%+v) = %v, want an error naming %s", r, err, field)
		}
	}
}

// TestValidSessionID: every shape of session id the agents produce (read from
// the providers' golden transcripts) passes; flags, whitespace, control
// characters and shell syntax do not.
func TestValidSessionID(t *testing.T) {
	t.Parallel()
	good := []string{
		"8d6bec71-ca4b-471f-b230-a7fc02bcf0c8",      // claude, codex threads, gemini, cursor, kimi
		"01a22b02-d12e-737c-a4aa-e6027149be87",      // UUIDv7 (pi)
		"ses_dd4f91b5cffeOj7xsy6GIa0Rzy",            // opencode
		"session_8c1e2d0a", "qoder-session-1", "s1", // copilot, qoder, fakes
		"/tmp/acp-pi/home/.pi/agent/sessions/--tmp-acp-pi-work-proj--/2026-11-30T05-51-07-666Z_01a22b01-cb92-754d-9a22-6bbc16cebae1.jsonl",
		"/" + strings.Repeat("d/", 300) + "x.jsonl", // a deep pi path, past MaxArgValueBytes
	}
	for _, v := range good {
		if err := ValidSessionID(v); err != nil {
			t.Errorf("ValidSessionID(%q) = %v, want nil", v, err)
		}
		if err := CheckRunArgs(RunRequest{ResumeID: v}); err != nil {
			t.Errorf("CheckRunArgs(ResumeID %q) = %v", v, err)
		}
	}
	bad := []string{"", "--fork", "-", "a b", "id\n--yolo", "id\x00", "$(id)", "a;b", "x=y", "\u202eid", strings.Repeat("a", MaxSessionIDBytes+1)}
	for _, v := range bad {
		if err := ValidSessionID(v); !errors.Is(err, ErrInvalidArgValue) {
			t.Errorf("ValidSessionID(%q) = %v, want ErrInvalidArgValue", v, err)
		}
	}
}
