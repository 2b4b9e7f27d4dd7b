// Tests of Process.Chunks and Session.Chunks: raw stdout, direct and relayed.

package procrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

const mixedOut = "{\"n\":1}\n\nnot json\r\n   \n{\"n\":2}\r\n{\"n\":3,\"type\":\"done\"}"

func TestChunksKeepEveryByte(t *testing.T) {
	for _, relayed := range []bool{false, true} {
		name := "direct"
		ctx := context.Background()
		if relayed {
			name = "relayed"
			ctx = WithRelay(ctx, testRelay(t).Run("chunks"))
		}
		t.Run(name, func(t *testing.T) {
			p, err := Start(ctx, nil, childSpec(t, "mixed"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := p.Chunks(func(b []byte) {
				if len(b) > ChunkBytes {
					t.Errorf("chunk of %d bytes", len(b))
				}
				got.Write(b)
			}); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if got.String() != mixedOut {
				t.Errorf("chunks = %q\nwant %q", got.String(), mixedOut)
			}
		})
	}
}

func TestChunksLarge(t *testing.T) {
	r := strings.NewReader(strings.Repeat("y", 3*ChunkBytes+5))
	var n, calls int
	if err := readChunks(r, func(b []byte) { n += len(b); calls++ }); err != nil {
		t.Fatal(err)
	}
	if n != 3*ChunkBytes+5 || calls < 4 {
		t.Errorf("%d bytes in %d chunks", n, calls)
	}
}

// chunkWire collects raw chunks and completes at exit.
type chunkWire struct{ got bytes.Buffer }

func (w *chunkWire) Start(c *Conn) error                            { c.CloseStdin(); return nil }
func (w *chunkWire) Line(b []byte, c *Conn) error                   { w.got.Write(b); return nil }
func (w *chunkWire) Respond(agent.InteractionResponse, *Conn) error { return nil }
func (w *chunkWire) Interrupt(*Conn) error                          { return ErrNoNative }
func (w *chunkWire) Outcome(o Outcome, c *Conn) error {
	c.Emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

func TestSessionChunks(t *testing.T) {
	for _, relayed := range []bool{false, true} {
		ctx := context.Background()
		rr := testRelay(t).Run("sc")
		if relayed {
			ctx = WithRelay(ctx, rr)
		}
		w := &chunkWire{}
		var evs []agent.Event
		err := Session{Provider: "t", Spec: childSpec(t, "mixed"), Wire: w, Chunks: true}.Run(ctx, func(ev agent.Event) { evs = append(evs, ev) })
		if err != nil {
			t.Fatal(err)
		}
		if w.got.String() != mixedOut {
			t.Errorf("relayed=%v: wire got %q\nwant %q", relayed, w.got.String(), mixedOut)
		}
		if len(evs) != 1 || evs[0].Type != agent.EventRunCompleted || rr.Relayed() != relayed {
			t.Errorf("relayed=%v: events %+v, relay used %v", relayed, evs, rr.Relayed())
		}
	}
}

func TestShareWithAgentWithoutIsolation(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(f)
	if err := ShareWithAgent(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f)
	was, _, _ := ownerOf(before)
	if uid, _, _ := ownerOf(after); uid != was {
		t.Errorf("owner changed without isolation: %d, was %d", uid, was)
	}
	env := []string{"HOME=/x"}
	if got := AgentEnviron(context.Background(), env); len(got) != 1 || got[0] != "HOME=/x" {
		t.Errorf("AgentEnviron = %q", got)
	}
}

func TestShareWithAgentIsolated(t *testing.T) {
	iso := needAgentUser(t)
	f := filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := WithIsolation(context.Background(), iso)
	if err := ShareWithAgent(ctx, f); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(f)
	if uid, gid, _ := ownerOf(fi); uid != iso.UID || gid != iso.GID || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner %d:%d mode %v, want %d:%d 0600", uid, gid, fi.Mode(), iso.UID, iso.GID)
	}
	env := AgentEnviron(ctx, []string{"PATH=/bin"})
	if !contains(env, "HOME="+iso.Home) || !contains(env, "USER="+iso.User) {
		t.Errorf("AgentEnviron = %q", env)
	}
}

func contains(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}
