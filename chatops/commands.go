// commands.go: recognizing commands in thread text and slash commands.

package chatops

import (
	"fmt"
	"sort"
	"strings"
)

// argCommands take exactly one argument when typed bare in a thread.
var argCommands = map[string]bool{"agent": true, "model": true, "effort": true, "mode": true, "project": true}

// ParseThreadCommand recognizes a command in a thread message (the bot's
// mention already removed). "/name arg" and "!name arg" always are commands. A
// bare word is one only in the exact form of a command, so that prose is a
// prompt: "stop", "status", "new", "fork", "agents", "help" alone; "agent ID",
// "model M", "effort L", "mode plan|default", "project P" with one argument.
// "help me fix this" is a prompt.
func ParseThreadCommand(text string) (Command, bool) {
	t := strings.TrimSpace(text)
	if c, ok := ParseCommand(t); ok {
		return c, true
	}
	fields := strings.Fields(t)
	if len(fields) == 0 || len(fields) > 2 {
		return Command{}, false
	}
	name := strings.ToLower(fields[0])
	if _, known := commands[name]; !known {
		return Command{}, false
	}
	switch {
	case argCommands[name] && len(fields) == 2:
		if name == "mode" && fields[1] != "plan" && fields[1] != "default" {
			return Command{}, false
		}
		return Command{Name: name, Arg: fields[1]}, true
	case !argCommands[name] && len(fields) == 1:
		return Command{Name: name}, true
	}
	return Command{}, false
}

// ParseSlashCommand parses the text of "/threadline <text>": a known command
// word with its argument, or (ok false) a prompt for a new chat.
func ParseSlashCommand(text string) (Command, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return Command{Name: "help"}, true
	}
	name, arg, _ := strings.Cut(t, " ")
	name = strings.ToLower(strings.TrimLeft(name, "/!"))
	if _, known := commands[name]; !known {
		return Command{}, false
	}
	return Command{Name: name, Arg: strings.TrimSpace(arg)}, true
}

// threadHelp is the help text of chat platforms.
func threadHelp() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("Mention me with a request and I pass it to the agent; replies in this thread continue the chat. Commands (mention me with one):\n")
	for _, n := range names {
		fmt.Fprintf(&sb, "• `%s`: %s\n", n, commands[n])
	}
	sb.WriteString("The same work as `/threadline <command>`; `/threadline <request>` starts a new thread.")
	return sb.String()
}
