//go:build linux

// ARG_MAX on Linux: a quarter of the stack limit.

package registry

import "syscall"

// maxArgMaxLinux is the kernel's cap: three quarters of the 8 MiB _STK_LIM.
const maxArgMaxLinux = 6 << 20

// ArgMax returns the total size argv plus envp may have. On Linux the kernel
// allows a quarter of RLIMIT_STACK (at least 128 KiB, at most 6 MiB).
func ArgMax() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &r); err != nil {
		return SafeArgMax
	}
	if r.Cur == ^uint64(0) || r.Cur/4 > maxArgMaxLinux {
		return maxArgMaxLinux
	}
	return max(int(r.Cur/4), SafeArgMax)
}
