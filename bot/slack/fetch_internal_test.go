package slack

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
)

// TestFetchLimitsWhileReading (issue 30): a file that declares 10 bytes
// and is served as 200 MiB is refused once the limit is passed: the bytes
// read from the server stop near the limit and memory stays bounded; a
// file within the limit is read whole; one that declares more than the
// limit is not asked for.
func TestFetchLimitsWhileReading(t *testing.T) {
	fake := slacktest.New(t)
	s := &surface{token: slacktest.BotToken}
	ctx := context.Background()
	const limit = 1 << 20

	id, u := fake.AddFile("small.txt", "text/plain", []byte("0123456789"))
	data, err := s.fetch(ctx, slack.File{ID: id, Name: "small.txt", Size: 10, URLPrivateDownload: u}, limit)
	if err != nil || string(data) != "0123456789" {
		t.Fatalf("small file: %q, %v", data, err)
	}

	fake.ServeSize(id, 200<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	data, err = s.fetch(ctx, slack.File{ID: id, Name: "small.txt", Size: 10, URLPrivateDownload: u}, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFileTooLarge) || data != nil {
		t.Fatalf("200 MiB served for 10 B declared: %d bytes, %v", len(data), err)
	}
	t.Logf("allocated %d KiB, the server wrote %d KiB", (after.TotalAlloc-before.TotalAlloc)>>10, fake.Served(id)>>10)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 50<<20 {
		t.Errorf("allocated %d MiB reading it", alloc>>20)
	}
	// The server stops once the client hangs up: what it wrote is the
	// limit and what the connection's buffers took meanwhile.
	if served := fake.Served(id) - 10; served > limit+32<<20 {
		t.Errorf("the server wrote %d MiB of the 200", served>>20)
	}

	id2, u2 := fake.AddFile("big.bin", "application/octet-stream", []byte("x"))
	fake.ServeSize(id2, limit+1)
	_, err = s.fetch(ctx, slack.File{ID: id2, Name: "big.bin", Size: limit + 1, URLPrivateDownload: u2}, limit)
	if !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("declared over the limit: %v", err)
	}
	if served := fake.Served(id2); served != 0 {
		t.Errorf("a file declared over the limit was downloaded (%d bytes)", served)
	}
}
