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
