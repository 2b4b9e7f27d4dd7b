//go:build cgo

// With cgo, the ambient and inheritable capabilities are cleared at load,
// while the process has its only thread (see DropInheritedCaps).

package procrun

/*
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#endif
#ifndef PR_CAP_AMBIENT_CLEAR_ALL
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

struct tl_cap_header { uint32_t version; int pid; };
struct tl_cap_data { uint32_t effective, permitted, inheritable; };

// A constructor runs before the Go runtime starts its threads: the one thread
// it changes is the one every later thread is cloned from. Failures are left
// to DropInheritedCaps, which checks every thread.
__attribute__((constructor)) static void tl_drop_inherited_caps(void) {
	struct tl_cap_header h = { 0x20080522, 0 }; // _LINUX_CAPABILITY_VERSION_3
	struct tl_cap_data d[2];
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capget, &h, d) == 0 && (d[0].inheritable || d[1].inheritable)) {
		d[0].inheritable = 0;
		d[1].inheritable = 0;
		syscall(SYS_capset, &h, d);
	}
}
*/
import "C"
