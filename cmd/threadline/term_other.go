//go:build !linux

package main

import "io"

// isTerminal reports false where terminals are not detected: approvals follow
// --interactions (default deny).
func isTerminal(io.Reader) bool { return false }
