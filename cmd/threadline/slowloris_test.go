// slowloris_test.go: serve's HTTP listener cuts slow clients within its
// timeouts.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/health"
	"github.com/threadline-bot/threadline/configs"
)

// bodyFront is a front-end whose route reads the whole body, as the Slack
// handler does once the signature headers are checked.
type bodyFront struct{ fakeFront }

func (f *bodyFront) Handlers() map[string]http.Handler {
	return map[string]http.Handler{"POST /slow/events": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ack")
	})}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestSlowClientsAreCut opens 100 connections that send their headers a byte
// at a time and 100 that send their body a byte at a time; every one must be
// closed by the server within its timeout (plus a margin for a loaded
// machine), long before the clients would finish.
func TestSlowClientsAreCut(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the read timeout (15 s)")
	}
	dir := isolate(t)
	addr := freeAddr(t)
	cfg := &configs.Config{Database: configs.DatabaseConfig{URL: filepath.Join(dir, "tl.db")}, HTTP: configs.HTTPConfig{Listen: addr}}
	a, err := openApp(context.Background(), cfg, slog.New(slog.DiscardHandler), agent.ApprovalAsk)
	if err != nil {
		t.Fatal(err)
	}
	front := &bodyFront{fakeFront{ran: make(chan struct{}), stopped: make(chan struct{})}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, a, []frontEnd{front}) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	<-front.ran
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not open: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	const n = 100
	const margin = 5 * time.Second
	headers := "POST /slow/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slack-Request-Timestamp: 1\r\nX-Slack-Signature: v0=00\r\nContent-Length: 4096\r\n\r\n"
	// slow sends head at once, then tail a byte every 250 ms, and returns
	// how long the server took to close the connection.
	slow := func(head, tail string) (time.Duration, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		start := time.Now()
		closed := make(chan time.Duration, 1)
		go func() {
			_, _ = io.Copy(io.Discard, c) // until the server closes
			closed <- time.Since(start)
		}()
		if _, err := io.WriteString(c, head); err != nil {
			return 0, err
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case d := <-closed:
				return d, nil
			case <-tick.C:
				if _, err := c.Write([]byte{tail[i%len(tail)]}); err != nil {
					return <-closed, nil
				}
			case <-time.After(health.ReadTimeout + margin + 10*time.Second):
				return 0, errors.New("still open")
			}
		}
	}
	type result struct {
		kind string
		took time.Duration
		err  error
	}
	results := make(chan result, 2*n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			d, err := slow("", headers) // headers byte by byte
			results <- result{"headers", d, err}
		})
		wg.Go(func() {
			d, err := slow(headers, `{"type":"event_callback"}`) // body byte by byte
			results <- result{"body", d, err}
		})
	}
	wg.Wait()
	close(results)
	took := map[string][]time.Duration{}
	for r := range results {
		if r.err != nil {
			t.Errorf("a slow %s connection: %v", r.kind, r.err)
			continue
		}
		took[r.kind] = append(took[r.kind], r.took)
	}
	for kind, limit := range map[string]time.Duration{"headers": health.ReadHeaderTimeout, "body": health.ReadTimeout} {
		ds := took[kind]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		if len(ds) != n {
			t.Errorf("%d of %d slow %s connections were cut", len(ds), n, kind)
			continue
		}
		t.Logf("%d slow %s connections cut after %s (first) to %s (last); timeout %s", n, kind, ds[0].Round(time.Millisecond), ds[n-1].Round(time.Millisecond), limit)
		if ds[n-1] > limit+margin {
			t.Errorf("a slow %s connection lasted %s, timeout %s", kind, ds[n-1], limit)
		}
		if ds[0] < limit-time.Second {
			t.Errorf("a slow %s connection was cut after %s, before its timeout %s", kind, ds[0], limit)
		}
	}
	// The listener still serves.
	res, err := http.Post(fmt.Sprintf("http://%s/slow/events", addr), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a normal request after the slow ones: %d", res.StatusCode)
	}
}
