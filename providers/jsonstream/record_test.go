// Recording real OpenCode output: THREADLINE_RECORD=1 go test -run TestRecordOpenCode.

package jsonstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// envRecord=1 runs the real opencode against the fake LLM in a loopback-only
// netns and rewrites testdata/opencode-*.jsonl (an env var, because the
// netns child does not see test flags).
const envRecord = "THREADLINE_RECORD"

// opencodeEnv is the offline switch set of the reference capture.
var opencodeEnv = []string{
	"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	"OPENCODE_DISABLE_EXTERNAL_SKILLS=1", "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9",
	"NO_PROXY=127.0.0.1,localhost",
}

// opencodeHome writes a HOME whose opencode config points at the fake
// (custom provider "fake" through the bundled @ai-sdk/openai-compatible).
func opencodeHome(t *testing.T, fakeURL string) string {
	t.Helper()
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       "fake/" + fakeopenai.DefaultModel,
		"small_model": "fake/" + fakeopenai.DefaultModel,
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": fakeURL + "/v1", "apiKey": "fake-key"},
			"models":  map[string]any{fakeopenai.DefaultModel: map[string]any{"name": "Fake Model"}},
		}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

type recordScenario struct {
	name   string
	prompt string
	script fakeopenai.Script
	args   []string
}

func TestRecordOpenCode(t *testing.T) {
	if os.Getenv(envRecord) != "1" {
		t.Skip("recording only with " + envRecord + "=1")
	}
	if !providertest.InNetns(t) {
		return
	}
	bin := providertest.FindCLI(t, "opencode", "THREADLINE_OPENCODE_BIN")
	scenarios := []recordScenario{
		{"text", "Say hello", fakeopenai.WithTools(fakeopenai.Text("Hello", " from the", " fake model.\n\nSecond paragraph.")), nil},
		{"reasoning", "Think first", fakeopenai.WithTools(fakeopenai.Reasoning([]string{"Let me ", "think."}, "The answer", " is 42.")), []string{"--thinking"}},
		{"tool", "Run it", fakeopenai.WithTools(fakeopenai.Shell("echo hi from the tool")), nil},
		{"tool-error", "Run a failing command", fakeopenai.WithTools(fakeopenai.Shell("ls /definitely/not/here")), nil},
		{"http500", "Fail please", fakeopenai.WithTools(fakeopenai.Error(400, "fake upstream rejected the request")), nil},
	}
	for _, sc := range scenarios {
		fake := fakeopenai.New(t, sc.script)
		home := opencodeHome(t, fake.URL())
		work := t.TempDir()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, bin, append([]string{"run", "--format", "json"}, sc.args...)...)
		cmd.Dir = work
		cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}, opencodeEnv...)
		cmd.Stdin = strings.NewReader(sc.prompt)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		t.Logf("%s: exit %v, %d bytes stdout, stderr tail %q", sc.name, err, stdout.Len(), tail(stderr.String(), 300))
		out := sanitize(stdout.Bytes(), map[string]string{work: "<WORK>", home: "<HOME>"})
		if err := os.WriteFile(filepath.Join("testdata", "opencode-"+sc.name+".jsonl"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(err); code != 0 {
			if err := os.WriteFile(filepath.Join("testdata", "opencode-"+sc.name+".exit"), []byte(fmt.Sprintf("%d\n", code)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var (
	idRE   = regexp.MustCompile(`\b(ses|msg|prt|call_fake|toolu|call)_[A-Za-z0-9_]+`)
	portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	dateRE = regexp.MustCompile(`"date":"[^"]*"`)
)

// sanitize replaces machine paths and renumbers native ids per prefix
// (ses_1, msg_1, ...) so the capture is stable and anonymous.
func sanitize(b []byte, paths map[string]string) []byte {
	s := string(b)
	for p, r := range paths {
		s = strings.ReplaceAll(s, p, r)
	}
	s = portRE.ReplaceAllString(s, "127.0.0.1:<PORT>")
	s = dateRE.ReplaceAllString(s, `"date":"<DATE>"`)
	seen := map[string]string{}
	count := map[string]int{}
	s = idRE.ReplaceAllStringFunc(s, func(id string) string {
		if r, ok := seen[id]; ok {
			return r
		}
		prefix := id[:strings.Index(id, "_")]
		count[prefix]++
		r := fmt.Sprintf("%s_%02d", prefix, count[prefix])
		seen[id] = r
		return r
	})
	return []byte(s)
}
