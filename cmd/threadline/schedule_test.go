package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScheduleCommands(t *testing.T) {
	dir := isolate(t)
	cfg := projectConfig(t, dir, "matrix:\n  homeserver: https://matrix.example.org\n  user_id: \"@bot:example.org\"\n  access_token: tok\n")
	mustRun := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs, err := run(t, "", append(args, "--config", cfg)...)
		if code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s", args, code, err, errs)
		}
		return out
	}
	out := mustRun(t, "schedule", "add", "standup", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin", "--channel", "C1",
		"--workspace", "T1", "--agent", "claude", "Summarise", "yesterday's commits")
	if !strings.Contains(out, "Added schedule standup; next run ") || !strings.Contains(out, "09:00 CE") {
		t.Errorf("add: %q", out)
	}
	mustRun(t, "schedule", "add", "room", "--cron", "@daily", "--channel", "!abc:other.org", "--catchup", "once", "check the build")

	var list []struct {
		Name, Platform, Workspace, Channel, Prompt, Catchup, Agent string
		Next                                                       string
	}
	if err := json.Unmarshal([]byte(mustRun(t, "schedule", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "room" || list[0].Platform != "matrix" || list[0].Workspace != "example.org" ||
		list[0].Catchup != "once" || list[1].Platform != "slack" || list[1].Prompt != "Summarise yesterday's commits" ||
		list[1].Agent != "claude" || list[1].Next == "" {
		t.Errorf("list --json: %+v", list)
	}
	if out := mustRun(t, "schedule", "list"); !strings.Contains(out, "standup") || !strings.Contains(out, "0 9 * * 1-5 (Europe/Berlin)") {
		t.Errorf("list: %q", out)
	}
	mustRun(t, "schedule", "run", "standup")
	if out := mustRun(t, "schedule", "list"); !strings.Contains(out, "requested") {
		t.Errorf("list after run: %q", out)
	}
	mustRun(t, "schedule", "remove", "standup")
	if out := mustRun(t, "schedule", "list"); strings.Contains(out, "standup") {
		t.Errorf("list after remove: %q", out)
	}

	for _, bad := range [][]string{
		{"schedule", "add", "x", "--cron", "0 9 * *", "--channel", "C1", "p"},
		{"schedule", "add", "x", "--cron", "0 9 * * *", "--tz", "Mars/Base", "--channel", "C1", "p"},
		{"schedule", "add", "x", "--cron", "0 9 * * *", "p"},
		{"schedule", "add", "x", "--cron", "0 9 * * *", "--channel", "C1"},
		{"schedule", "add", "x", "--cron", "0 9 * * *", "--channel", "C1", "--catchup", "all", "p"},
		{"schedule", "frob"},
	} {
		if code, _, _, _ := run(t, "", append(bad, "--config", cfg)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	for _, bad := range [][]string{{"schedule", "add", "room", "--cron", "@daily", "--channel", "C1", "p"}, {"schedule", "remove", "nope"}, {"schedule", "run", "nope"}} {
		if code, _, errs, err := run(t, "", append(bad, "--config", cfg)...); code == 0 && err == nil {
			t.Errorf("%v: no error: %s", bad, errs)
		}
	}
}
