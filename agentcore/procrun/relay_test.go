// Tests of the relay: the test binary re-executed as relay and as agent.

package procrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// relayChild runs the relay, or the slow echoing agent: it prints {"n":i}
// every TICK ms for N ticks, echoes every stdin line as {"echo":...} and
// prints {"type":"done"} when both are over, exiting with EXIT.
func relayChild(mode string) int {
	if mode == "relay" {
		logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
		if err := RunRelay(context.Background(), os.Args[2:], os.Stdin, os.Stdout, logger); err != nil {
			return 1
		}
		return 0
	}
	n, _ := strconv.Atoi(os.Getenv("N"))
	tick, _ := strconv.Atoi(os.Getenv("TICK"))
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	print := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(s + "\n")
		out.Flush()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= n; i++ {
			time.Sleep(time.Duration(tick) * time.Millisecond)
			print(fmt.Sprintf(`{"n":%d}`, i))
		}
	})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		b, _ := json.Marshal(map[string]string{"echo": sc.Text()})
		print(string(b))
	}
	wg.Wait()
	print(`{"type":"done"}`)
	os.Stderr.WriteString("bye from agent\n")
	code, _ := strconv.Atoi(os.Getenv("EXIT"))
	return code
}

func testRelay(t *testing.T) Relay {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Short: the socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "tlr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return Relay{Dir: dir, Command: []string{exe, "relay"}, Env: []string{childEnv + "=relay"}}
}

func slowSpec(t *testing.T, n, tick, exit int) Spec {
	s := childSpec(t, "slowecho", "N="+strconv.Itoa(n), "TICK="+strconv.Itoa(tick), "EXIT="+strconv.Itoa(exit))
	s.Stdin = true
	return s
}

// readAll collects the process's lines until Each returns.
func readAll(p *Process) ([]string, error) {
	var got []string
	err := p.Each(func(b []byte) error { got = append(got, string(b)); return nil })
	return got, err
}

func TestRelayRunsAndExits(t *testing.T) {
	r := testRelay(t)
	rr := r.Run("run-1")
	p, err := Start(WithRelay(t.Context(), rr), nil, slowSpec(t, 3, 5, 4))
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Relayed() || p.Pid() <= 0 {
		t.Fatalf("relayed=%v pid=%d", rr.Relayed(), p.Pid())
	}
	fi, err := os.Stat(r.RunDir("run-1"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("relay dir: %v %v", fi, err)
	}
	for _, l := range []string{"a", "b"} {
		if err := p.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteLine([]byte("late")); !errors.Is(err, ErrStdinClosed) {
		t.Fatalf("write after close = %v", err)
	}
	got, err := readAll(p)
	if err != nil {
		t.Fatal(err)
	}
	werr := p.Wait()
	pe, ok := IsExit(werr)
	if !ok || pe.ExitCode != 4 || !strings.Contains(pe.Stderr, "bye from agent") {
		t.Fatalf("Wait = %v", werr)
	}
	joined := strings.Join(got, "\n")
	if len(got) != 6 || !strings.Contains(joined, `{"echo":"a"}`) || !strings.Contains(joined, `{"echo":"b"}`) || got[5] != `{"type":"done"}` {
		t.Fatalf("lines = %q", got)
	}
	// The journal holds no stdin text, and no file the arguments or environment.
	b, _ := os.ReadFile(filepath.Join(r.RunDir("run-1"), relayMeta))
	if strings.Contains(string(b), "slowecho") {
		t.Fatalf("meta holds the environment: %s", b)
	}
	if err := rr.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.RunDir("run-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dir left: %v", err)
	}
}

// TestRelayDetachReattach: a reader detaches mid-run (as a dying bot would);
// the agent keeps running; a reattach replays the journal from the start and
// suppresses the writes already made, so the agent sees each write once.
func TestRelayDetachReattach(t *testing.T) {
	r := testRelay(t)
	spec := slowSpec(t, 30, 20, 0)
	rr := r.Run("run-2")
	p, err := Start(WithRelay(t.Context(), rr), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	// The "provider": writes w1, w2 after the third tick, w3 after the 20th, then closes stdin.
	provider := func(p *Process, stopAfter int) ([]string, error) {
		var got []string
		ticks := 0
		err := p.Each(func(b []byte) error {
			got = append(got, string(b))
			if strings.HasPrefix(string(b), `{"n":`) {
				ticks++
				switch ticks {
				case 3:
					_ = p.WriteLine([]byte("w1"))
					_ = p.WriteLine([]byte("w2"))
				case 20:
					_ = p.WriteLine([]byte("w3"))
					_ = p.CloseStdin()
				}
				if ticks == stopAfter {
					rr.Detach()
				}
			}
			return nil
		})
		return got, err
	}
	_, err = provider(p, 8)
	if !errors.Is(err, ErrDetached) {
		t.Fatalf("Each after detach = %v", err)
	}
	if err := p.Wait(); !errors.Is(err, ErrDetached) {
		t.Fatalf("Wait after detach = %v", err)
	}
	if err := p.Kill(); err != nil { // a detached process is not touched
		t.Fatal(err)
	}
	states, err := ListRelays(r.Dir)
	if err != nil || len(states) != 1 || !states[0].Live {
		t.Fatalf("ListRelays = %+v, %v", states, err)
	}

	rr = r.Reattach("run-2")
	p2, err := Start(WithRelay(t.Context(), rr), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := provider(p2, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Wait(); err != nil {
		t.Fatal(err)
	}
	var ticks []string
	echoes := map[string]int{}
	for _, l := range got {
		var v struct {
			N    int
			Echo string
		}
		_ = json.Unmarshal([]byte(l), &v)
		if v.N > 0 {
			ticks = append(ticks, strconv.Itoa(v.N))
		}
		if v.Echo != "" {
			echoes[v.Echo]++
		}
	}
	if len(ticks) != 30 || ticks[0] != "1" || ticks[29] != "30" {
		t.Fatalf("ticks = %v", ticks)
	}
	if echoes["w1"] != 1 || echoes["w2"] != 1 || echoes["w3"] != 1 || len(echoes) != 3 {
		t.Fatalf("echoes = %v (every write must reach the agent exactly once)", echoes)
	}
	if got[len(got)-1] != `{"type":"done"}` {
		t.Fatalf("last line %q", got[len(got)-1])
	}
}

// TestRelayExitWhileDetached: the agent ends while nobody follows; a
// reattach replays the whole journal and gets the exit status from the record.
func TestRelayExitWhileDetached(t *testing.T) {
	r := testRelay(t)
	spec := slowSpec(t, 5, 5, 3)
	spec.Stdin = false
	rr := r.Run("run-3")
	if _, err := Start(WithRelay(t.Context(), rr), nil, spec); err != nil {
		t.Fatal(err)
	}
	rr.Detach()
	deadline := time.Now().Add(10 * time.Second)
	for {
		states, _ := ListRelays(r.Dir)
		if len(states) == 1 && states[0].Exited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay did not record the exit: %+v", states)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := Start(WithRelay(t.Context(), r.Reattach("run-3")), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(p)
	if err != nil || len(got) != 6 {
		t.Fatalf("replay = %q, %v", got, err)
	}
	if pe, ok := IsExit(p.Wait()); !ok || pe.ExitCode != 3 {
		t.Fatalf("Wait = %v", p.Wait())
	}
}

func TestRelayGone(t *testing.T) {
	r := testRelay(t)
	_, err := Start(WithRelay(t.Context(), r.Reattach("nope")), nil, slowSpec(t, 1, 1, 0))
	if !errors.Is(err, ErrRelayGone) {
		t.Fatalf("reattach without relay = %v", err)
	}
	// A dir whose relay died before recording an exit is gone too.
	if err := os.Mkdir(r.RunDir("dead"), 0o700); err != nil {
		t.Fatal(err)
	}
	states, _ := ListRelays(r.Dir)
	if len(states) != 1 || states[0].Reattachable() {
		t.Fatalf("states = %+v", states)
	}
	if _, err := Start(WithRelay(t.Context(), r.Reattach("dead")), nil, slowSpec(t, 1, 1, 0)); !errors.Is(err, ErrRelayGone) {
		t.Fatalf("reattach dead relay = %v", err)
	}
}

// TestRelayOnlyFirstStart: the claim is used by the first Start of a run.
func TestRelayOnlyFirstStart(t *testing.T) {
	r := testRelay(t)
	ctx := WithRelay(t.Context(), r.Run("run-4"))
	spec := slowSpec(t, 1, 1, 0)
	spec.Stdin = false
	p1, err := Start(ctx, nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Start(ctx, nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	if p1.relay == nil || p2.relay != nil {
		t.Fatalf("relayed: first %v, second %v", p1.relay != nil, p2.relay != nil)
	}
	for _, p := range []*Process{p1, p2} {
		if _, err := readAll(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRelayNeedsItsToken: a client of the relay's own uid that does not
// know its token (a sandboxed agent of the bot's uid names the socket from
// /proc but cannot read the token file) gets nothing: its kill is refused,
// the connection closed, and the run goes on for its owner.
func TestRelayNeedsItsToken(t *testing.T) {
	r := testRelay(t)
	rr := r.Run("tok")
	p, err := Start(WithRelay(t.Context(), rr), nil, slowSpec(t, 3, 5, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{`{"op":"kill"}`, `{"op":"kill","token":"guess"}`} {
		c, err := net.DialTimeout("unix", filepath.Join(r.RunDir("tok"), relaySock), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write([]byte(req + "\n")); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		line, _ := rd.ReadString('\n')
		if !strings.Contains(line, "unauthorized") {
			t.Errorf("%s: the relay answered %q", req, line)
		}
		if _, err := rd.ReadString('\n'); err == nil {
			t.Errorf("%s: the connection stayed open", req)
		}
		c.Close()
	}
	if fi, err := os.Stat(filepath.Join(r.RunDir("tok"), relayTok)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	for _, l := range []string{"a", "b"} {
		if err := p.WriteLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(p)
	if err != nil || len(got) == 0 || got[len(got)-1] != `{"type":"done"}` {
		t.Fatalf("the run did not go on: %v %v", got, err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}
