// Tests for the process runner, with the test binary re-executed as the child.

package procrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

const childEnv = "PROCRUN_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child is the fake CLI.
func child(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "relay", "slowecho":
		return relayChild(mode)
	case "session":
		return sessionChild()
	case "ident", "nodump", "probe", "nbot", "secrets":
		return isoChild(mode)
	case "mixed":
		fmt.Fprint(out, "{\"n\":1}\n\nnot json\r\n   \n{\"n\":2}\r\n{\"n\":3,\"type\":\"done\"}")
	case "bigline":
		fmt.Fprintln(out, `{"n":1}`)
		big := bytes.Repeat([]byte("x"), 20<<20)
		out.Write([]byte(`{"n":"`))
		out.Write(big)
		out.Write([]byte("\"}\n"))
		fmt.Fprintln(out, `{"n":2,"type":"done"}`)
	case "stderr":
		line := strings.Repeat("e", 99) + "\n"
		for range 2000 { // 200,000 bytes
			os.Stderr.WriteString(line)
		}
		os.Stderr.WriteString("last words\n")
		return 3
	case "exit":
		fmt.Fprintln(out, `{"n":1,"type":"failed"}`)
		os.Stderr.WriteString("boom\nsecond line\n")
		return 7
	case "echo":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Fprintf(out, "{\"echo\":%q}\n", sc.Text())
			out.Flush()
		}
		fmt.Fprintln(out, `{"type":"done"}`)
	case "hang":
		fmt.Fprintln(out, `{"n":1}`)
		out.Flush()
		if os.Getenv("IGNORE_INT") != "" {
			signal.Ignore(os.Interrupt)
		}
		time.Sleep(time.Minute)
	case "stream": // BenchmarkSessionRead
		f, err := os.Open(os.Getenv("STREAM"))
		if err != nil {
			return 98
		}
		if _, err := io.Copy(os.Stdout, f); err != nil {
			return 98
		}
	case "env":
		for _, kv := range os.Environ() {
			b, _ := json.Marshal(map[string]string{"env": kv})
			out.Write(append(b, '\n'))
		}
		fmt.Fprintln(out, `{"type":"done"}`)
	default:
		return 99
	}
	return 0
}

func childSpec(t testing.TB, mode string, env ...string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Bin: exe, Env: append([]string{childEnv + "=" + mode}, env...)}
}

func testLogger(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	var buf lockedBuffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf.b
}

type lockedBuffer struct{ b bytes.Buffer }

func (l *lockedBuffer) Write(p []byte) (int, error) { return l.b.Write(p) }

// jsonParser is a tiny LineParser: each JSON object is one event; type "done"
// completes, "failed" fails.
type jsonParser struct{}

func (jsonParser) Parse(line []byte) ([]agent.Event, error) {
	var v map[string]any
	if err := json.Unmarshal(line, &v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	switch v["type"] {
	case "done":
		return []agent.Event{{Type: agent.EventRunCompleted}}, nil
	case "failed":
		return []agent.Event{{Type: agent.EventRunFailed, Text: "failed"}}, nil
	}
	return []agent.Event{{Type: agent.EventProviderNative, Native: &agent.Native{Payload: json.RawMessage(line)}}}, nil
}

// runOptions tunes runLines.
type runOptions struct {
	Provider  agent.ProviderID
	StopGrace time.Duration // zero means 5 s
}

// runLines is the one-way line protocol the tests drive: a Session over a
// LineWire whose stdin is closed at once, SIGINT then the kill after
// StopGrace on cancel, no exit deadline of its own.
func runLines(ctx context.Context, logger *slog.Logger, spec Spec, parser LineParser, opts runOptions, emit func(agent.Event)) error {
	grace := opts.StopGrace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	return Session{
		Provider: opts.Provider, Spec: spec, Wire: &LineWire{Parser: parser}, Logger: logger,
		InterruptTimeout: grace, ExitTimeout: -1, Interrupted: "cancelled",
	}.Run(ctx, emit)
}

func collect(t *testing.T, ctx context.Context, spec Spec, opts runOptions) ([]agent.Event, string, error) {
	t.Helper()
	logger, logs := testLogger(t)
	var evs []agent.Event
	err := runLines(ctx, logger, spec, jsonParser{}, opts, func(ev agent.Event) {
		if ev.Native != nil {
			ev.Native = &agent.Native{Payload: slices.Clone(ev.Native.Payload)}
		}
		evs = append(evs, ev)
	})
	return evs, logs.String(), err
}

func TestRunMalformedLinesSkipped(t *testing.T) {
	evs, logs, err := collect(t, t.Context(), childSpec(t, "mixed"), runOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev.Native != nil {
			got = append(got, string(ev.Native.Payload))
		} else {
			got = append(got, string(ev.Type))
		}
	}
	want := []string{`{"n":1}`, `{"n":2}`, "run.completed"}
	if !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
	if !strings.Contains(logs, "stdout line skipped") || !strings.Contains(logs, "not json") {
		t.Errorf("malformed line not logged with excerpt:\n%s", logs)
	}
}

func TestRunHugeLineDiscarded(t *testing.T) {
	// The line is skipped and reading goes on, but the run does not pass for
	// a success: it says so in an event and fails (see Conn.terminal).
	evs, logs, err := collect(t, t.Context(), childSpec(t, "bigline"), runOptions{})
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	if len(evs) != 3 || string(evs[0].Native.Payload) != `{"n":1}` || evs[1].Type != agent.EventSystem ||
		evs[2].Type != agent.EventRunFailed || !strings.Contains(evs[2].Text, "over the 16 MiB limit") {
		t.Fatalf("events = %+v", evs)
	}
	if !strings.Contains(logs, "stdout line over the limit skipped") {
		t.Errorf("long line not logged:\n%s", logs)
	}
}

func TestEachLineLimits(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     []string
	}{
		{"exact", "12345\nabc", 5, []string{"12345", "abc"}},
		{"crlf", "12345\r\nabc\r\n", 5, []string{"12345", "abc"}},
		{"long", "123456\nabc\n", 5, []string{"abc"}},
		{"long-crlf", "123456\r\nabc\n", 5, []string{"abc"}},
		{"long-last", "abc\n1234567890", 5, []string{"abc"}},
		{"empty", "\n\n  \n", 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			r := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			err := eachLine(r, tt.max, slog.New(slog.DiscardHandler), func(b []byte) error {
				got = append(got, string(b))
				return nil
			})
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestStderrCapAndExitCode(t *testing.T) {
	logger, _ := testLogger(t)
	p, err := Start(t.Context(), logger, childSpec(t, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Each(func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	pe, ok := IsExit(err)
	if !ok {
		t.Fatalf("Wait = %v, want *ProcessError", err)
	}
	if pe.ExitCode != 3 {
		t.Errorf("exit code = %d, want 3", pe.ExitCode)
	}
	if len(pe.Stderr) != MaxStderrBytes {
		t.Errorf("stderr kept %d bytes, want %d", len(pe.Stderr), MaxStderrBytes)
	}
	if !strings.HasSuffix(pe.Stderr, "last words\n") {
		t.Errorf("stderr tail lost: %q", pe.Stderr[len(pe.Stderr)-40:])
	}
	if msg := pe.Error(); !strings.Contains(msg, "exit status 3") || !strings.HasSuffix(msg, "last words") || len(msg) > 700 {
		t.Errorf("Error() = %q", msg)
	}
}

func TestRunFailedNonZero(t *testing.T) {
	evs, _, err := collect(t, t.Context(), childSpec(t, "exit"), runOptions{})
	if !errors.Is(err, agent.ErrRunFailed) {
		t.Fatalf("err = %v, want ErrRunFailed", err)
	}
	pe, ok := IsExit(err)
	if !ok || pe.ExitCode != 7 || !strings.Contains(err.Error(), "boom | second line") {
		t.Fatalf("err = %v (%+v)", err, pe)
	}
	if got := evs[len(evs)-1]; got.Type != agent.EventRunFailed || got.Text != "failed" {
		t.Fatalf("last event = %+v", got)
	}
}

func TestRunWithoutTerminalFails(t *testing.T) {
	spec := childSpec(t, "stderr")
	evs, _, err := collect(t, t.Context(), spec, runOptions{Provider: "fake"})
	if !errors.Is(err, agent.ErrRunFailed) {
		t.Fatalf("err = %v", err)
	}
	if len(evs) != 1 || evs[0].Type != agent.EventRunFailed || !strings.HasPrefix(evs[0].Text, "fake exited without a result: ") || !strings.HasSuffix(evs[0].Text, "last words") {
		t.Fatalf("events = %+v", evs)
	}
}

func TestRunCancel(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run("ignore_int="+strconv.FormatBool(ignore), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			spec := childSpec(t, "hang")
			if ignore {
				spec.Env = append(spec.Env, "IGNORE_INT=1")
			}
			var evs []agent.Event
			start := time.Now()
			err := runLines(ctx, nil, spec, jsonParser{}, runOptions{StopGrace: 200 * time.Millisecond}, func(ev agent.Event) {
				evs = append(evs, ev)
				if len(evs) == 1 {
					cancel()
				}
			})
			if err != nil {
				t.Fatalf("err = %v, want nil on cancel", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("cancel took %v", d)
			}
			if last := evs[len(evs)-1]; last.Type != agent.EventRunInterrupted {
				t.Fatalf("last event = %+v", last)
			}
		})
	}
}

func TestMissingBinary(t *testing.T) {
	for _, bin := range []string{"threadline-no-such-cli", "/nonexistent/dir/cli", ""} {
		_, err := Start(t.Context(), nil, Spec{Bin: bin})
		if !errors.Is(err, agent.ErrNotInstalled) {
			t.Errorf("Start(%q) = %v, want ErrNotInstalled", bin, err)
		}
		if bin != "" && !strings.Contains(err.Error(), bin) {
			t.Errorf("error %q does not name %q", err, bin)
		}
	}
	if _, err := LookPath("threadline-no-such-cli"); !errors.Is(err, agent.ErrNotInstalled) {
		t.Errorf("LookPath = %v", err)
	}
}

func TestWriteLine(t *testing.T) {
	p, err := Start(t.Context(), nil, func() Spec { s := childSpec(t, "echo"); s.Stdin = true; return s }())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string)
	go func() {
		var got []string
		_ = p.Each(func(b []byte) error { got = append(got, string(b)); return nil })
		done <- got
	}()
	errs := make(chan error, 20)
	for i := range 20 { // concurrent writers must not interleave
		go func() { errs <- p.WriteLine([]byte(strings.Repeat(strconv.Itoa(i%10), 5000))) }()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WriteLine([]byte("bye\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteLine([]byte("late")); !errors.Is(err, ErrStdinClosed) {
		t.Errorf("WriteLine after close = %v", err)
	}
	got := <-done
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 22 || got[20] != `{"echo":"bye"}` {
		t.Fatalf("got %d lines, last %q", len(got), got[len(got)-2:])
	}
	for _, l := range got[:20] {
		var v struct{ Echo string }
		if json.Unmarshal([]byte(l), &v) != nil || len(v.Echo) != 5000 || strings.Trim(v.Echo, v.Echo[:1]) != "" {
			t.Fatalf("interleaved write: %.60q", l)
		}
	}
}

func TestEnviron(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/bot", "LC_ALL=C", "XDG_CONFIG_HOME=/x", "TERM=xterm",
		"SLACK_BOT_TOKEN=xoxb", "MATRIX_TOKEN=m", "DATABASE_URL=postgres://", "THREADLINE_DB=x",
		"GITHUB_TOKEN=gh", "AWS_SECRET_ACCESS_KEY=a", "HTTP_PROXY=http://p", "ANTHROPIC_API_KEY=host",
		"MY_CFG_SECRET=s", "BROKEN", "=x",
	}
	extra := map[string]string{
		"ANTHROPIC_API_KEY": "configured", // explicit operator config passes
		"GH_TOKEN":          "t",
		"HOME":              "/override",
		"SLACK_APP_TOKEN":   "never",
		"DATABASE_URL":      "never",
		"MY_CFG_SECRET":     "never",
	}
	secret := func(k string) bool { return k == "MY_CFG_SECRET" }
	got := Environ(base, extra, secret)
	want := []string{
		"PATH=/usr/bin", "LC_ALL=C", "XDG_CONFIG_HOME=/x", "TERM=xterm", "HTTP_PROXY=http://p",
		"ANTHROPIC_API_KEY=configured", "GH_TOKEN=t", "HOME=/override",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Environ =\n%q\nwant\n%q", got, want)
	}
	if got := Environ(base, nil, nil); slices.ContainsFunc(got, func(kv string) bool { return strings.Contains(kv, "TOKEN") }) {
		t.Fatalf("token leaked: %q", got)
	}
}

func TestEnvReachesChild(t *testing.T) {
	spec := childSpec(t, "env")
	spec.Env = append(spec.Env, Environ([]string{"PATH=/bin", "SLACK_BOT_TOKEN=x"}, map[string]string{"FOO": "bar"}, nil)...)
	evs, _, err := collect(t, t.Context(), spec, runOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, ev := range evs {
		if ev.Native != nil {
			var v struct{ Env string }
			_ = json.Unmarshal(ev.Native.Payload, &v)
			env = append(env, v.Env)
		}
	}
	slices.Sort(env)
	want := []string{"FOO=bar", "PATH=/bin", childEnv + "=env"}
	if !slices.Equal(env, want) {
		t.Fatalf("child env = %q, want %q", env, want)
	}
}
