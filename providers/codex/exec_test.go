// Golden test of the legacy `codex exec --json` parser, plus the recorder
// that captured its inputs from the real CLI (THREADLINE_RECORD_EXEC=1).

package codex_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
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

var update = flag.Bool("update", false, "rewrite testdata/*.events.jsonl from the parser's output")

func execInputs(t *testing.T) []string {
	t.Helper()
	all, _ := filepath.Glob("testdata/exec-*.jsonl")
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".events.jsonl") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no exec transcripts in testdata")
	}
	return out
}

func renderExec(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := codex.NewExecParser("")
	var buf bytes.Buffer
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		evs, err := p.Parse(l)
		if err != nil {
			b, _ := json.Marshal(map[string]string{"parse_error": err.Error()})
			buf.Write(append(b, '\n'))
		}
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			buf.Write(append(b, '\n'))
		}
	}
	return buf.Bytes()
}

func TestExecGolden(t *testing.T) {
	for _, in := range execInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := renderExec(t, in)
			golden := strings.TrimSuffix(in, ".jsonl") + ".events.jsonl"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs; run go test -update and review the diff", golden)
			}
		})
	}
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
