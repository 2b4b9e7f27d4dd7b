//go:build race

package procrun

// poisonReleased makes a released read buffer overwritten (see
// readBatch.release): tests run with the race detector show a wire that
// keeps a line past its call.
const poisonReleased = true
