//go:build !linux

// Other systems have no Landlock: nothing can be sandboxed.

package sandbox

import "fmt"

// ABI returns 0: Landlock is Linux's.
func ABI() int { return 0 }

// Available reports false: Landlock is Linux's.
func Available() (ok bool, why string) { return false, "Landlock is a Linux feature" }

// Report says what Apply enforced; see the Linux build.
type Report struct {
	ABI                 int
	FS                  string
	ConnectTCP, BindTCP bool
	Scoped              bool
	Skipped             []string
}

// Plan fails: nothing can be sandboxed here.
func Plan(p Policy) (Report, error) { return Report{}, fmt.Errorf("%w: not Linux", ErrUnavailable) }

// Apply fails: nothing can be sandboxed here.
func Apply(p Policy) (Report, error) { return Report{}, fmt.Errorf("%w: not Linux", ErrUnavailable) }

// Exec fails: nothing can be sandboxed here.
func Exec(args []string, environ []string) error {
	return fmt.Errorf("%w: not Linux", ErrUnavailable)
}

// CheckNotSecureExec has nothing to check outside Linux.
func CheckNotSecureExec() error { return nil }
