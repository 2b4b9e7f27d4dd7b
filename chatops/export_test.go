// export_test.go: what the external tests read of the package's internals.

package chatops

// Commands returns the command table, for the tests that check every parser
// and the help text against it.
func Commands() []CommandSpec {
	out := make([]CommandSpec, len(commandTable))
	for i, s := range commandTable {
		out[i] = *s
	}
	return out
}

// TakesRest reports whether the command named takes the rest of a thread
// message as its argument (pr's title), prose of any length.
func TakesRest(name string) bool {
	s, ok := lookupCommand(name)
	return ok && s.rest
}
