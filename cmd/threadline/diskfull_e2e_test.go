package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// smallDisk mounts a tmpfs of size bytes for the test (root only) and
// returns its directory.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0711", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until the file system has about leave bytes
// free, and returns its path.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	free, err := freeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if free > leave {
		if err := os.WriteFile(p, make([]byte, free-leave), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// floodAPI is the scripted model of the flood tests: a prompt with FLOOD
// gets kb lines of about 1 KB, each word repeated; one with CALM gets "All
// quiet.".
func floodAPI(t *testing.T, word string, kb int) *fakeapi.Server {
	t.Helper()
	chunk := strings.Repeat(word+" ", 1024/(len(word)+1)) + "\n"
	flood := make([]string, kb)
	for i := range flood {
		flood[i] = chunk
	}
	return fakeapi.New(t, fakeapi.When("FLOOD", func(*fakeapi.Request) *fakeapi.Reply { return fakeapi.TextReply(flood...) }),
		fakeapi.When("CALM", func(*fakeapi.Request) *fakeapi.Reply { return fakeapi.TextReply("All ", "quiet.") }))
}

// TestDiskFullEndToEnd: serve with its SQLite database on a small tmpfs,
// the Slack fake and the real Claude CLI. The disk fills while an answer
// streams: the run is stopped, the thread is told why in one line, and
// once space is freed the run's end is recorded and the next prompt in the
// thread is answered (the chat is not left running).
func TestDiskFullEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	disk := smallDisk(t, "16m")
	api := floodAPI(t, "bytes", 4096) // about 4 MB, more than the disk has left
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"database": map[string]any{"url": filepath.Join(disk, "tl.db")},
		"storage":  map[string]any{"min_free": -1},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}}},
	})
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	filler := fill(t, disk, 512<<10)
	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> FLOOD the disk"})
	s.mention("EvF", root, "", "FLOOD the disk")
	s.notice(root, "This run was stopped: the database's disk is full")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> CALM now"})
	s.mention("EvC", ts, root, "CALM now")
	s.notice(root, "All quiet.")
}

// TestStorageFloor: below storage.min_free on the database's disk a run is
// refused, saying how much is free and the setting; above it, admitted.
func TestStorageFloor(t *testing.T) {
	disk := smallDisk(t, "8m")
	cfg, err := configs.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database.URL = filepath.Join(disk, "tl.db")
	cfg.Workdir = filepath.Join(disk, "work")
	cfg.Storage.MinFree = 4 << 20
	admit := admitStorage(cfg)
	if err := admit(context.Background()); err != nil {
		t.Fatalf("8 MB free, floor 4 MB: %v", err)
	}
	fill(t, disk, 1<<20)
	err = admit(context.Background())
	if err == nil || !strings.Contains(err.Error(), "below storage.min_free (4 MB)") || !strings.Contains(err.Error(), "the database") {
		t.Fatalf("1 MB free, floor 4 MB: %v", err)
	}
	cfg.Storage.MinFree = -1
	if admitStorage(cfg) != nil {
		t.Error("min_free -1 still checks")
	}
}
