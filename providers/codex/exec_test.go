// Golden test of the legacy `codex exec --json` parser, plus the recorder
// that captured its inputs from the real CLI (THREADLINE_RECORD_EXEC=1).

package codex_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func renderExec(t *testing.T, path string) []byte {
	t.Helper()
	r := providertest.NewRecorder(t)
	p := codex.NewExecParser("")
	for _, l := range providertest.Lines(t, path) {
		r.Parsed(p.Parse(l))
	}
	return r.Bytes()
}

func TestExecGolden(t *testing.T) {
	providertest.Golden(t, "testdata/exec-*.jsonl", renderExec)
}

func TestExecParserFacts(t *testing.T) {
	var evs []agent.Event
	for _, l := range bytes.Split(bytes.TrimSpace(renderExec(t, "testdata/exec-shell.jsonl")), []byte("\n")) {
		var ev agent.Event
		_ = json.Unmarshal(l, &ev)
		evs = append(evs, ev)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
	}
	got := strings.Join(types, " ")
	for _, want := range []string{"session.updated", "tool.started", "tool.completed", "assistant.delta", "usage.updated", "run.completed"} {
		if !strings.Contains(got, want) {
			t.Errorf("exec-shell events %q lack %s", got, want)
		}
	}
	if last := evs[len(evs)-1]; last.Type != agent.EventRunCompleted || !strings.Contains(last.Text, "exec-ok") {
		t.Errorf("last %+v", last)
	}
	if _, err := codex.NewExecParser("").Parse([]byte(`{"type":`)); err == nil {
		t.Error("malformed line accepted")
	}
}

var execIDs = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestRecordExec captures `codex exec --json` output from the real CLI against
// the fake into testdata/exec-*.jsonl. It only runs with THREADLINE_RECORD_EXEC=1.
func TestRecordExec(t *testing.T) {
	if os.Getenv("THREADLINE_RECORD_EXEC") != "1" {
		t.Skip("recorder: set THREADLINE_RECORD_EXEC=1 to re-record testdata/exec-*.jsonl")
	}
	outDir, _ := filepath.Abs("testdata")
	bin := providertest.FindCLI(t, "codex", "THREADLINE_CODEX_BIN")
	if !providertest.InNetns(t) {
		return
	}
	fake := fakeresponses.New(t,
		fakeresponses.When("exec-text", fakeresponses.Thinking([]string{"Thinking ", "briefly."}, "Hello ", "from exec.")),
		fakeresponses.When("exec-shell", fakeresponses.Shell("echo exec-ok")),
		fakeresponses.When("exec-error", fakeresponses.Error(400, "fake: scripted exec failure")),
	)
	for _, name := range []string{"exec-text", "exec-shell", "exec-error"} {
		home, env, err := fake.CodexHome(t.TempDir(), "fake-model")
		if err != nil {
			t.Fatal(err)
		}
		env["CODEX_HOME"] = home
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", name+": go")
		cmd.Dir = t.TempDir()
		cmd.Env = procrun.Environ(os.Environ(), env, nil)
		out, _ := cmd.Output()
		cancel()
		var clean bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := execIDs.ReplaceAllString(sc.Text(), "00000000-0000-0000-0000-000000000000")
			l = strings.ReplaceAll(l, cmd.Dir, "<CWD>")
			clean.WriteString(l + "\n")
		}
		if err := os.WriteFile(filepath.Join(outDir, name+".jsonl"), clean.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", name, clean.String())
	}
}

func TestExecParserFailure(t *testing.T) {
	out := renderExec(t, "testdata/exec-error.jsonl")
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var last agent.Event
	_ = json.Unmarshal(lines[len(lines)-1], &last)
	if last.Type != agent.EventRunFailed || last.Text != "fake: scripted exec failure" {
		t.Errorf("last %+v", last)
	}
}
