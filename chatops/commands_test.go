// commands_test.go: the command table drives every parser and the help text.

package chatops_test

import (
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
)

// TestCommandTable: each command of the table (and each alias) parses in the
// console, thread and slash forms to its canonical name, and help, generated
// from the table, lists every command.
func TestCommandTable(t *testing.T) {
	bot := chatops.New(nil, nil, nil, nil, nil)
	res, err := bot.Execute(t.Context(), "", chatops.Command{Name: "help"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range chatops.Commands() {
		for _, word := range append([]string{s.Name}, s.Aliases...) {
			in := word
			if s.Arg {
				in += " x"
				if len(s.Values) > 0 {
					in = word + " " + s.Values[0]
				}
			}
			for name, parse := range map[string]func(string) (chatops.Command, bool){
				"ParseCommand": chatops.ParseCommand, "ParseThreadCommand": chatops.ParseThreadCommand, "ParseSlashCommand": chatops.ParseSlashCommand,
			} {
				text := in
				if name == "ParseCommand" {
					text = "/" + in
				}
				if c, ok := parse(text); !ok || c.Name != s.Name {
					t.Errorf("%s(%q) = %+v, %v; want %s", name, text, c, ok, s.Name)
				}
			}
		}
		if !strings.Contains(res.Text, "/"+s.Usage) {
			t.Errorf("the console's help does not list %q:\n%s", s.Usage, res.Text)
		}
		if s.Help == "" || s.Usage == "" {
			t.Errorf("command %s has no help or usage", s.Name)
		}
	}
	if c, ok := chatops.ParseThreadCommand("commands"); !ok || c.Name != "help" {
		t.Errorf("the alias commands = %+v, %v", c, ok)
	}
}
