// The stdout pipe's capacity on Linux.

package procrun

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the capacity asked for a child's stdout pipe: a fast
// stream is then read a bigBatchBytes buffer at a time instead of the
// default 64 KiB, with fewer hand-overs and wake-ups. It counts towards
// the bot user's pipe quota (fs.pipe-user-pages-soft, 64 MiB by default,
// unlimited with CAP_SYS_RESOURCE): 100 runs take 25 MiB of it.
const pipeBytes = bigBatchBytes

// growPipe asks for a stdout pipe of pipeBytes. It is best effort: the
// pipe keeps its size when the system refuses (over the quota).
func growPipe(r io.Reader) {
	f, ok := r.(*os.File)
	if !ok {
		return
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = sc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes) })
}
