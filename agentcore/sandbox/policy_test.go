// Tests of the policy's helpers: ports, overlaps, exclusion, the command
// line.

package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestPortsOf(t *testing.T) {
	got := PortsOf(
		"https://api.anthropic.com/v1",
		"http://localhost:11434/v1",
		"wss://gw.example:8443/ws",
		"ws://gw.example",
		"HTTPS://upper.example",
		"127.0.0.1:9000",
		"[::1]:9001",
		" https://spaces.example ",
		"https://api.example:443",
		"ftp://no.default.port",
		"not a url",
		"http://bad:port/",
		"http://zero:0/",
		"",
	)
	want := []uint16{80, 443, 8443, 9000, 9001, 11434}
	if !slices.Equal(got, want) {
		t.Errorf("PortsOf = %v, want %v", got, want)
	}
	if got := PortsOf(); len(got) != 0 {
		t.Errorf("PortsOf() = %v", got)
	}
}

func TestOverlaps(t *testing.T) {
	dir := t.TempDir()
	bot := filepath.Join(dir, "bot")
	data := filepath.Join(bot, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "innocent")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	forbidden := []string{data}
	for name, tc := range map[string]struct {
		p    Policy
		want error
	}{
		"unrelated":         {Policy{ReadWrite: []string{filepath.Join(dir, "work")}, ReadOnly: []string{"/usr"}}, nil},
		"sibling prefix":    {Policy{ReadWrite: []string{data + "2"}}, nil},
		"equal":             {Policy{ReadOnly: []string{data}}, ErrOverlap},
		"equal, unclean":    {Policy{ReadOnly: []string{bot + "/./data/"}}, ErrOverlap},
		"above":             {Policy{ReadWrite: []string{bot}}, ErrOverlap},
		"root":              {Policy{ReadOnly: []string{"/"}}, ErrOverlap},
		"below":             {Policy{Devices: []string{filepath.Join(data, "db")}}, ErrOverlap},
		"through a link":    {Policy{ReadOnly: []string{link}}, ErrOverlap},
		"below a link":      {Policy{Terminals: []string{filepath.Join(link, "x", "y")}}, ErrOverlap},
		"policy's own list": {Policy{ReadOnly: []string{"/usr"}, Forbidden: []string{"/usr/lib"}}, ErrOverlap},
		"relative":          {Policy{ReadOnly: []string{"usr"}}, ErrPolicy},
		"empty":             {Policy{ReadWrite: []string{""}}, ErrPolicy},
	} {
		err := Overlaps(tc.p, forbidden)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if err := Overlaps(Policy{ReadOnly: []string{"/usr"}}, []string{"relative"}); !errors.Is(err, ErrPolicy) {
		t.Errorf("relative forbidden path: %v, want ErrPolicy", err)
	}
}

func TestExclude(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"etc/ssl/certs", "etc/threadline", "etc/hosts", "etc/ssl/private/key", "usr/bin"} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(p string) string { return filepath.Join(dir, p) }
	got, err := Exclude(
		[]string{j("etc"), j("usr"), j("etc/threadline/x")},
		[]string{j("etc/threadline"), j("etc/ssl/private")},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{j("etc/hosts"), j("etc/ssl/certs"), j("usr")}
	if !slices.Equal(got, want) {
		t.Errorf("Exclude = %q, want %q", got, want)
	}
	if err := Overlaps(Policy{ReadOnly: got}, []string{j("etc/threadline"), j("etc/ssl/private")}); err != nil {
		t.Errorf("the result overlaps: %v", err)
	}
	if _, err := Exclude([]string{"etc"}, nil); !errors.Is(err, ErrPolicy) {
		t.Errorf("relative path: %v, want ErrPolicy", err)
	}
	if _, err := Exclude([]string{j("nowhere")}, []string{j("nowhere/x")}); err == nil {
		t.Error("splitting a missing directory: no error")
	}
}

func TestSystemPaths(t *testing.T) {
	ro := SystemReadOnly()
	for _, want := range []string{"/usr", "/etc", "/proc"} {
		if !slices.Contains(ro, want) {
			t.Errorf("SystemReadOnly() = %q lacks %s", ro, want)
		}
	}
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !covered(real, ro) {
		t.Errorf("SystemReadOnly() = %q does not cover %s (/etc/resolv.conf)", ro, real)
	}
	if dev := SystemDevices(); !slices.Contains(dev, "/dev/null") {
		t.Errorf("SystemDevices() = %q", dev)
	}
}

func TestCommand(t *testing.T) {
	p := Policy{
		ReadWrite:  []string{"/work/chat"},
		ReadOnly:   []string{"/usr", "/opt/agent"},
		ConnectTCP: []uint16{80, 443},
		BindTCP:    []uint16{0},
		Scope:      true,
		Forbidden:  []string{"/var/lib/threadline"},
	}
	path, argv, err := Command([]string{"/usr/local/bin/threadline", "sandbox"}, p, "/opt/agent/bin/claude", []string{"-p", "--", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if path != "/usr/local/bin/threadline" || argv[0] != path || argv[1] != "sandbox" || argv[3] != "--" || argv[4] != "/opt/agent/bin/claude" {
		t.Fatalf("Command = %q %q", path, argv)
	}
	got, bin, agentArgv, err := parseArgs(argv[2:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) || bin != "/opt/agent/bin/claude" || !slices.Equal(agentArgv, []string{bin, "-p", "--", "x"}) {
		t.Errorf("parseArgs = %+v %q %q", got, bin, agentArgv)
	}

	for name, tc := range map[string]struct {
		helper []string
		p      Policy
		bin    string
	}{
		"no helper":       {nil, p, "/bin/true"},
		"relative helper": {[]string{"threadline", "sandbox"}, p, "/bin/true"},
		"relative bin":    {[]string{"/t", "sandbox"}, p, "true"},
		"relative path":   {[]string{"/t", "sandbox"}, Policy{ReadOnly: []string{"usr"}}, "/bin/true"},
		"too long":        {[]string{"/t", "sandbox"}, Policy{ReadOnly: []string{"/" + strings.Repeat("x", maxArg)}}, "/bin/true"},
	} {
		if _, _, err := Command(tc.helper, tc.p, tc.bin, nil); !errors.Is(err, ErrPolicy) {
			t.Errorf("%s: %v, want ErrPolicy", name, err)
		}
	}
}

func TestParseArgs(t *testing.T) {
	good, _ := json.Marshal(Policy{ReadOnly: []string{"/usr"}})
	for name, tc := range map[string]struct {
		args []string
		want error
	}{
		"good":          {[]string{string(good), "--", "/bin/true", "a"}, nil},
		"no bin":        {[]string{string(good), "--"}, ErrUsage},
		"no --":         {[]string{string(good), "/bin/true", "a"}, ErrUsage},
		"relative bin":  {[]string{string(good), "--", "true"}, ErrUsage},
		"unknown field": {[]string{`{"read_only":["/usr"],"allow_all":true}`, "--", "/bin/true"}, ErrUsage},
		"trailing data": {[]string{string(good) + ` {}`, "--", "/bin/true"}, ErrUsage},
		"relative path": {[]string{`{"read_write":["work"]}`, "--", "/bin/true"}, ErrPolicy},
	} {
		_, _, _, err := parseArgs(tc.args)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
