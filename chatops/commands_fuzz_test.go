// commands_fuzz_test.go: fuzz targets of the chat command parsers.

package chatops_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/chatops"
)

var commandSeeds = []string{
	"stop", "status", "pr fix the login page 500", "/stop", "!status", "model gpt-5", "model --auto", "effort high", "mode plan", "mode yolo",
	"agent claude", "project web extra", "/project  web ", "help me fix this", "", " ", "/", "!", "/MODEL x",
	"model\tx", "model\x00x", "agents\n", "/threadline stop", "new\u00a0chat", "ＳＴＯＰ", "\xff\xfe", "fork",
}

// checkCommand is what every parse that succeeds must give: a lowercase
// one-word name that parses back to itself, and a trimmed argument.
func checkCommand(t *testing.T, parser, in string, c chatops.Command) {
	t.Helper()
	if c.Name == "" || strings.ContainsFunc(c.Name, unicode.IsSpace) || c.Name != strings.ToLower(c.Name) {
		t.Fatalf("%s(%q) gave the name %q", parser, in, c.Name)
	}
	if again, ok := chatops.ParseCommand("/" + c.Name); !ok || again.Name != c.Name {
		t.Fatalf("%s(%q) gave %q, which does not parse back (%+v, %v)", parser, in, c.Name, again, ok)
	}
	if c.Arg != strings.TrimSpace(c.Arg) {
		t.Fatalf("%s(%q) gave the untrimmed argument %q", parser, in, c.Arg)
	}
	if utf8.ValidString(in) && !utf8.ValidString(c.Arg) {
		t.Fatalf("%s(%q) broke a rune in the argument %q", parser, in, c.Arg)
	}
}

// FuzzParseCommand: "/name arg" and "!name arg" parse without a panic.
func FuzzParseCommand(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if c, ok := chatops.ParseCommand(in); ok {
			checkCommand(t, "ParseCommand", in, c)
		}
	})
}

// FuzzParseThreadCommand: a thread message (mention removed) parses without a
// panic; prose stays a prompt and a slash form agrees with ParseCommand.
func FuzzParseThreadCommand(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, ok := chatops.ParseThreadCommand(in)
		if !ok {
			return
		}
		checkCommand(t, "ParseThreadCommand", in, c)
		if pc, pok := chatops.ParseCommand(in); pok && pc != c {
			t.Fatalf("ParseThreadCommand(%q) = %+v, ParseCommand = %+v", in, c, pc)
		}
		if s := strings.TrimSpace(in); s[0] != '/' && s[0] != '!' && len(strings.Fields(s)) > 2 && !chatops.TakesRest(c.Name) {
			t.Fatalf("ParseThreadCommand took prose of more than two words as the command %+v: %q", c, in)
		}
	})
}

// FuzzParseSlashCommand: the text of "/threadline <text>" parses without a
// panic; an empty text is help.
func FuzzParseSlashCommand(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, ok := chatops.ParseSlashCommand(in)
		if strings.TrimSpace(in) == "" && (!ok || c.Name != "help") {
			t.Fatalf("ParseSlashCommand(%q) = %+v, %v; want help", in, c, ok)
		}
		if ok {
			checkCommand(t, "ParseSlashCommand", in, c)
		}
	})
}
