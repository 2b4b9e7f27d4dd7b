// Run tokens: what marks every process a run's child starts, for Sweep.

package procrun

import "crypto/rand"

// RunTokenEnv names the variable a run's child gets a random value in: a
// tool it started carries it in its environment, so the tool is found after
// the run even when it left the child's process group (several agent CLIs
// start every shell command in a session of its own).
const RunTokenEnv = "THREADLINE_RUN_TOKEN"

// RunToken returns a fresh RunTokenEnv=<random> environment entry, to add
// to a Spec's Env after Environ (which drops THREADLINE_* keys) and to
// Sweep with once the run ended.
func RunToken() string { return RunTokenEnv + "=" + rand.Text() }
