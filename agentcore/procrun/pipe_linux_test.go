package procrun

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStdoutPipeGrown: a child's stdout pipe is asked for pipeBytes, so a
// fast stream is read bigBatchBytes at a time.
func TestStdoutPipeGrown(t *testing.T) {
	p, err := Start(t.Context(), nil, childSpec(t, "mixed"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := p.stdout.(*os.File).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	if err := sc.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); err != nil {
		t.Fatal(err)
	}
	if err != nil || size != pipeBytes {
		t.Errorf("stdout pipe = %d bytes (%v), want %d", size, err, pipeBytes)
	}
	_ = p.Each(func([]byte) error { return nil })
	_ = p.Wait()
}
