// Command-line parsing shared by the subcommands: --help prints the usage to
// stdout and succeeds, flags may follow positional arguments (a prompt, a
// project name) until "--", and a bad flag is an error naming it.

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlagSet is a subcommand's flag set. Its parse errors are returned, not
// printed; -h and --help print synopsis and the flags to stdout.
func newFlagSet(name string, stdout, stderr io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fs.SetOutput(stdout)
		defer fs.SetOutput(io.Discard)
		fmt.Fprint(stdout, strings.TrimRight(synopsis, "\n")+"\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses the flags wherever they appear among args and returns
// the positional arguments; everything after "--" is positional. --help
// gives flag.ErrHelp (exit status 0, the usage printed); a bad flag an exit
// status 2 error that names it.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{2, fmt.Errorf("%s: %w (see threadline %s --help)", fs.Name(), err, fs.Name())}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// parseExactly is parseArgs that wants the positional arguments named by
// want, no more and no fewer.
func parseExactly(fs *flag.FlagSet, args []string, want ...string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != len(want) {
		if len(want) == 0 {
			return nil, &exitError{2, fmt.Errorf("%s takes no arguments, got %q (see threadline %s --help)", fs.Name(), pos, fs.Name())}
		}
		return nil, &exitError{2, fmt.Errorf("%s: want %s, got %d argument(s) (see threadline %s --help)", fs.Name(), strings.Join(want, " "), len(pos), fs.Name())}
	}
	return pos, nil
}
