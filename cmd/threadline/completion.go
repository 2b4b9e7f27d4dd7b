// threadline completion bash|zsh|fish: a shell completion script made from
// the real commands. The command words are the table below; each command's
// flags are read from its own flag set (its --help), so a flag added to a
// command is completed without touching this file.

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// cmdWord is a word of the command line that selects a command: a
// subcommand, or a word under one (project add, project secret set).
type cmdWord struct {
	name string
	subs []cmdWord
}

// completionCommands are the visible commands of mainImpl's switch and the
// words under them (the hidden relay and sandbox are left out). A test
// checks each is dispatched and each is in its usage text.
var completionCommands = []cmdWord{
	{name: "serve"}, {name: "chat"}, {name: "run"}, {name: "chats"}, {name: "init"},
	{name: "migrate"}, {name: "audit"}, {name: "agents"}, {name: "doctor"},
	{name: "project", subs: []cmdWord{
		{name: "add"}, {name: "access"}, {name: "list"}, {name: "remove"},
		{name: "secret", subs: []cmdWord{{name: "set"}, {name: "list"}, {name: "unset"}}},
	}},
	{name: "workspace", subs: []cmdWord{
		{name: "list"}, {name: "diff"}, {name: "push"}, {name: "pr"}, {name: "merge"}, {name: "remove"}, {name: "gc"},
	}},
	{name: "workspaces"},
	{name: "schedule"}, // its words: threadline schedule --help
	{name: "completion", subs: []cmdWord{{name: "bash"}, {name: "zsh"}, {name: "fish"}}},
	{name: "version"}, {name: "help"},
}

// completionShells are the shells completion writes a script for.
var completionShells = map[string]func(w io.Writer, nodes []cmdNode){
	"bash": writeBash, "zsh": writeZsh, "fish": writeFish,
}

// cmdFlag is one flag of a command's flag set.
type cmdFlag struct {
	name  string // without dashes
	value bool   // takes a value (--config F); else a boolean
	usage string
}

// dashed is the flag as it is usually written: -n, --config.
func (f cmdFlag) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// cmdNode is one command path (its words after "threadline"), the words
// that may follow it and, for a leaf, its flags.
type cmdNode struct {
	path  []string
	subs  []string
	flags []cmdFlag
}

// key is the node's path as the scripts spell it: "threadline project add".
func (n cmdNode) key() string { return strings.Join(append([]string{"threadline"}, n.path...), " ") }

func cmdCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("completion", stdout, stderr, `threadline completion bash|zsh|fish: the shell completion script
  bash: threadline completion bash > /etc/bash_completion.d/threadline
  zsh:  threadline completion zsh > "${fpath[1]}/_threadline"
  fish: threadline completion fish > ~/.config/fish/completions/threadline.fish`)
	pos, err := parseExactly(fs, args, "SHELL")
	if err != nil {
		return err
	}
	write, ok := completionShells[pos[0]]
	if !ok {
		return &exitError{2, fmt.Errorf("completion: unknown shell %q: bash, zsh or fish", pos[0])}
	}
	nodes, err := commandTree(ctx)
	if err != nil {
		return err
	}
	write(stdout, nodes)
	return nil
}

// commandTree walks completionCommands, reading each leaf's flags from its
// --help, and returns every node, parents first.
func commandTree(ctx context.Context) ([]cmdNode, error) {
	var nodes []cmdNode
	var walk func(path []string, words []cmdWord) error
	walk = func(path []string, words []cmdWord) error {
		n := cmdNode{path: path}
		for _, w := range words {
			n.subs = append(n.subs, w.name)
		}
		if len(words) == 0 && len(path) > 0 {
			var err error
			if n.flags, err = commandFlags(ctx, path); err != nil {
				return err
			}
		}
		nodes = append(nodes, n)
		for _, w := range words {
			if err := walk(append(path[:len(path):len(path)], w.name), w.subs); err != nil {
				return err
			}
		}
		return nil
	}
	return nodes, walk(nil, completionCommands)
}

// commandFlags runs "threadline PATH --help" and reads the flags it lists
// after "Flags:" (flag.PrintDefaults: "  -name type" then the usage
// indented by a tab; a boolean has no type).
func commandFlags(ctx context.Context, path []string) ([]cmdFlag, error) {
	switch path[0] {
	case "version", "help":
		return nil, nil // no flag set
	}
	var out bytes.Buffer
	code, err := mainImpl(append(path[:len(path):len(path)], "--help"), strings.NewReader(""), &out, io.Discard)
	if err != nil || code != 0 {
		return nil, fmt.Errorf("completion: threadline %s --help: exit %d: %v", strings.Join(path, " "), code, err)
	}
	var flags []cmdFlag
	inFlags := false
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Flags:":
			inFlags = true
		case inFlags && strings.HasPrefix(line, "  -"):
			head, usage, _ := strings.Cut(strings.TrimPrefix(line, "  -"), "\t") // "  -x\tusage": a one-letter boolean
			name, typ, _ := strings.Cut(head, " ")
			flags = append(flags, cmdFlag{name: name, value: typ != "", usage: usage})
		case inFlags && strings.HasPrefix(line, "    \t") && len(flags) > 0:
			f := &flags[len(flags)-1]
			f.usage = strings.TrimSpace(f.usage + " " + strings.TrimSpace(line))
		}
	}
	sort.Slice(flags, func(i, j int) bool { return flags[i].name < flags[j].name })
	return flags, nil
}

// The three scripts work alike: the words typed so far that name a command
// path ("threadline project add") select the words and flags offered next;
// after a flag that takes a value, files are offered.

// pathCases is the shell's case patterns of every node but the root, as
// "threadline project"|"threadline project add"... in quotes of sh.
func pathCases(nodes []cmdNode) string {
	var q []string
	for _, n := range nodes[1:] {
		q = append(q, `"`+n.key()+`"`)
	}
	return strings.Join(q, "|")
}

// flagNames are the flags of n, dashed; valueOnly: only those that take a value.
func flagNames(n cmdNode, valueOnly bool) string {
	var s []string
	for _, f := range n.flags {
		if f.value || !valueOnly {
			s = append(s, f.dashed())
		}
	}
	return strings.Join(s, " ")
}

func writeBash(w io.Writer, nodes []cmdNode) {
	fmt.Fprintf(w, `# bash completion for threadline: threadline completion bash > /etc/bash_completion.d/threadline
_threadline() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local cmdpath=threadline i words="" flags="" values=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "$cmdpath ${COMP_WORDS[i]}" in
        %s) cmdpath="$cmdpath ${COMP_WORDS[i]}" ;;
        esac
    done
    case "$cmdpath" in
`, pathCases(nodes))
	for _, n := range nodes {
		fmt.Fprintf(w, "    %s) words=%s flags=%s values=%s ;;\n", shQuote(n.key()), shQuote(strings.Join(n.subs, " ")), shQuote(flagNames(n, false)), shQuote(flagNames(n, true)))
	}
	fmt.Fprint(w, `    esac
    if [[ -n $prev && " $values " == *" $prev "* ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [[ -n $words ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _threadline threadline
`)
}

// shQuote quotes s for sh, bash and zsh in single quotes.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeZsh(w io.Writer, nodes []cmdNode) {
	fmt.Fprintf(w, `#compdef threadline
# zsh completion for threadline: threadline completion zsh > "${fpath[1]}/_threadline"
_threadline() {
    local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}"
    local cmdpath=threadline i
    local -a subs flags values
    for ((i = 2; i < CURRENT; i++)); do
        case "$cmdpath ${words[i]}" in
        %s) cmdpath="$cmdpath ${words[i]}" ;;
        esac
    done
    case "$cmdpath" in
`, pathCases(nodes))
	for _, n := range nodes {
		var specs, values []string
		for _, f := range n.flags {
			specs = append(specs, shQuote(f.dashed()+":"+strings.ReplaceAll(f.usage, ":", `\:`)))
			if f.value {
				values = append(values, f.dashed())
			}
		}
		fmt.Fprintf(w, "    %s) subs=(%s) flags=(%s) values=(%s) ;;\n", shQuote(n.key()), strings.Join(n.subs, " "), strings.Join(specs, " "), strings.Join(values, " "))
	}
	fmt.Fprint(w, `    esac
    if (( ${values[(Ie)$prev]} )); then
        _files
    elif [[ $cur == -* ]]; then
        _describe -t flags flag flags
    elif (( ${#subs} )); then
        compadd -- $subs
    else
        _files
    fi
}
if [[ "$funcstack[1]" == _threadline ]]; then
    _threadline "$@"
else
    compdef _threadline threadline
fi
`)
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, nodes []cmdNode) {
	fmt.Fprintf(w, `# fish completion for threadline: threadline completion fish > ~/.config/fish/completions/threadline.fish
function __threadline_path
    set -l p threadline
    for w in (commandline -opc)[2..-1]
        switch "$p $w"
            case %s
                set p "$p $w"
        end
    end
    echo $p
end
function __threadline_at
    test (__threadline_path) = "$argv[1]"
end
complete -c threadline -f
`, strings.ReplaceAll(pathCases(nodes), "|", " "))
	for _, n := range nodes {
		at := fishQuote("__threadline_at " + fishQuote(n.key()))
		if len(n.subs) > 0 {
			fmt.Fprintf(w, "complete -c threadline -n %s -a %s\n", at, fishQuote(strings.Join(n.subs, " ")))
		}
		for _, f := range n.flags {
			opt := "-l " + f.name
			if len(f.name) == 1 {
				opt = "-o " + f.name
			}
			if f.value {
				opt += " -r -F"
			}
			fmt.Fprintf(w, "complete -c threadline -n %s %s -d %s\n", at, opt, fishQuote(f.usage))
		}
	}
}
