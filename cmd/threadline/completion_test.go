package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// completionScript is `threadline completion SHELL`'s output.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := mainImpl([]string{"completion", shell}, strings.NewReader(""), &out, &errb)
	if err != nil || code != 0 {
		t.Fatalf("completion %s: exit %d, %v, %s", shell, code, err, errb.String())
	}
	return out.String()
}

// allWords is every word of completionCommands, at any depth.
func allWords(words []cmdWord) []string {
	var s []string
	for _, w := range words {
		s = append(s, w.name)
		s = append(s, allWords(w.subs)...)
	}
	return s
}

// TestCompletionScripts: each shell's script names every command word and
// the shell itself accepts it (zsh and fish: apt-get install zsh fish).
func TestCompletionScripts(t *testing.T) {
	check := map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "--no-execute"}}
	for shell, argv := range check {
		t.Run(shell, func(t *testing.T) {
			s := completionScript(t, shell)
			for _, w := range allWords(completionCommands) {
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`).MatchString(s) {
					t.Errorf("the %s script does not name %q", shell, w)
				}
			}
			for _, f := range []string{"--config", "--http-only", "--fork", "--delete-container", "--dry-run"} {
				if shell != "fish" && !strings.Contains(s, f) || shell == "fish" && !strings.Contains(s, "-l "+f[2:]) {
					t.Errorf("the %s script does not name the flag %s", shell, f)
				}
			}
			if _, err := exec.LookPath(argv[0]); err != nil {
				if os.Getenv("CI") == "true" || os.Getenv("THREADLINE_E2E") == "1" {
					t.Fatalf("%s is not installed: the script's syntax is not checked", argv[0])
				}
				t.Skipf("%s is not installed: the script's syntax is not checked", argv[0])
			}
			file := filepath.Join(t.TempDir(), "threadline."+shell)
			if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(argv[0], append(argv[1:], file)...).CombinedOutput(); err != nil {
				t.Fatalf("%s rejects the script: %v\n%s", strings.Join(argv, " "), err, out)
			}
		})
	}
}

// TestCompletionOffers asks bash and fish for completions the way they ask
// when Tab is pressed.
func TestCompletionOffers(t *testing.T) {
	cases := []struct {
		line string // typed so far; the last word is being completed
		want []string
		not  []string
	}{
		{"threadline pro", []string{"project"}, []string{"serve"}},
		{"threadline project secret ", []string{"set", "list", "unset"}, []string{"add"}},
		{"threadline chats -", []string{"-n", "--json", "--config"}, []string{"--fork"}},
		{"threadline run --config x --", []string{"--fork", "--agent", "--interactions"}, []string{"--json"}},
		{"threadline workspace gc --", []string{"--dry-run"}, nil},
		{"threadline completion ", []string{"bash", "zsh", "fish"}, nil},
	}
	t.Run("bash", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "threadline.bash")
		if err := os.WriteFile(file, []byte(completionScript(t, "bash")), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			words := strings.Split(c.line, " ")
			script := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _threadline; printf '%s\n' "${COMPREPLY[@]}"`
			out, err := exec.Command("bash", append([]string{"-c", script, "bash", file}, words...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v\n%s", c.line, err, out)
			}
			checkOffers(t, c.line, strings.Fields(string(out)), c.want, c.not)
		}
	})
	t.Run("fish", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			if os.Getenv("CI") == "true" || os.Getenv("THREADLINE_E2E") == "1" {
				t.Fatal("fish is not installed (apt-get install fish)")
			}
			t.Skip("fish is not installed (apt-get install fish)")
		}
		file := filepath.Join(t.TempDir(), "threadline.fish")
		if err := os.WriteFile(file, []byte(completionScript(t, "fish")), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			out, err := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, file, c.line).CombinedOutput()
			if err != nil {
				t.Fatalf("%q: %v\n%s", c.line, err, out)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				got = append(got, strings.Split(l, "\t")[0])
			}
			checkOffers(t, c.line, got, c.want, c.not)
		}
	})
}

func checkOffers(t *testing.T, line string, got, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%q offers %q, want %q among them", line, got, w)
		}
	}
	for _, w := range not {
		if slices.Contains(got, w) {
			t.Errorf("%q offers %q, which includes %q", line, got, w)
		}
	}
}

// TestCompletionTable: the table and mainImpl agree: each word is
// dispatched and in its usage text, and each command of the usage is in the
// table.
func TestCompletionTable(t *testing.T) {
	var top []string
	for _, c := range completionCommands {
		top = append(top, c.name)
		var out, errb bytes.Buffer
		code, _ := mainImpl([]string{c.name, "--help"}, strings.NewReader(""), &out, &errb)
		if strings.Contains(errb.String(), "unknown command") {
			t.Errorf("%s is not dispatched: %s", c.name, errb.String())
		}
		if c.name != "help" && !strings.Contains(usage, "threadline "+c.name+" ") && !strings.Contains(usage, "threadline "+c.name+"\n") {
			t.Errorf("the usage does not list %s", c.name)
		}
		if len(c.subs) == 0 && code != 0 {
			t.Errorf("%s --help: exit %d: %s", c.name, code, errb.String())
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  threadline ([a-z]+)`).FindAllStringSubmatch(usage, -1) {
		if !slices.Contains(top, m[1]) {
			t.Errorf("threadline %s is in the usage but not in completionCommands", m[1])
		}
	}
	subUsage := map[string]string{"project": projectUsage, "workspace": workspaceUsage, "completion": "bash zsh fish"}
	for _, c := range completionCommands {
		for _, s := range c.subs {
			if !strings.Contains(subUsage[c.name], s.name) {
				t.Errorf("%s %s is not in %s's usage", c.name, s.name, c.name)
			}
		}
	}
	nodes, err := commandTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, n := range nodes {
		for _, f := range n.flags {
			flags[n.key()+" "+f.dashed()] = map[bool]string{true: "value", false: "bool"}[f.value]
		}
	}
	for k, want := range map[string]string{
		"threadline chats -n": "value", "threadline chats --json": "bool", "threadline run --fork": "bool",
		"threadline run --config": "value", "threadline project secret set --config": "value",
		"threadline project remove --delete-container": "bool", "threadline workspace pr --title": "value",
	} {
		if flags[k] != want {
			t.Errorf("%s: %q, want %q", k, flags[k], want)
		}
	}
}

func TestCompletionRefusesUnknownShell(t *testing.T) {
	code, err := mainImpl([]string{"completion", "tcsh"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if code != 2 || err == nil || !strings.Contains(err.Error(), "bash, zsh or fish") {
		t.Fatalf("completion tcsh: exit %d, %v", code, err)
	}
	var out bytes.Buffer
	if _, err := mainImpl([]string{"help"}, strings.NewReader(""), &out, &bytes.Buffer{}); err != nil || !strings.Contains(out.String(), "threadline completion bash|zsh|fish") {
		t.Fatalf("help does not list completion: %v\n%s", err, out.String())
	}
}
