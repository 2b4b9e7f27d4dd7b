// Scripts: how a fake server picks its reply to a request. A script is a
// function of the request that returns the reply, or nil when the request
// is not its business; each fake names its own Script type
// (func(*Request) *Reply) and builds on these.

package fakehttp

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Pick returns the reply of the first script that answers req (nil if none).
func Pick[S ~func(*Q) *A, Q, A any](scripts []S, req *Q) *A {
	for _, s := range scripts {
		if r := s(req); r != nil {
			return r
		}
	}
	return nil
}

// Filter passes to s only the requests for which ok holds.
func Filter[S ~func(*Q) *A, Q, A any](ok func(*Q) bool, s S) S {
	return func(req *Q) *A {
		if !ok(req) {
			return nil
		}
		return s(req)
	}
}

// Sequence answers the i-th request it sees with scripts[i]; the last one
// repeats (e.g. "fail once, then succeed", or a turn of several calls).
func Sequence[S ~func(*Q) *A, Q, A any](scripts ...S) S {
	var n atomic.Int64
	return func(req *Q) *A {
		i := int(n.Add(1) - 1)
		if i >= len(scripts) {
			i = len(scripts) - 1
		}
		return scripts[i](req)
	}
}

// When passes to s the requests whose text (the prompt a fake's scripts
// key on) contains substr.
func When[S ~func(*Q) *A, Q, A any](text func(*Q) string, substr string, s S) S {
	return Filter(func(req *Q) bool { return strings.Contains(text(req), substr) }, s)
}

// Words are n text deltas "word00 ", "word01 ", ...: what the fakes' Slow
// scripts stream, so that a cancel test can wait for the first few.
func Words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("word%02d ", i)
	}
	return out
}

// NoScenario is the text deltas a fake answers when no script answers a
// request with prompt: "fake: no scenario for " and the prompt quoted.
func NoScenario(prompt string) []string {
	return []string{"fake: no scenario for ", fmt.Sprintf("%q", Clip(prompt, 200))}
}

// Split cuts s into n pieces of the same length (the last one shorter, and
// fewer pieces when s is shorter than n): how the fakes stream a tool call's
// arguments. An empty s has no pieces.
func Split(s string, n int) []string {
	var out []string
	step := (len(s) + n - 1) / n
	for i := 0; i < len(s); i += step {
		out = append(out, s[i:min(i+step, len(s))])
	}
	return out
}

// Scripted is a recording server that answers from scripts of type S.
type Scripted[R, S any] struct {
	*Server[R]
	Scripts []S
}

// Start listens like Listen, makes the fake's handler H of the Scripted
// with wrap (a fake's Server embeds it) and serves that handler.
func Start[R, S any, H http.Handler](name string, log Logger, scripts []S, wrap func(*Scripted[R, S]) H) H {
	s := &Scripted[R, S]{Server: Listen[R](name, log), Scripts: scripts}
	h := wrap(s)
	s.Serve(h)
	return h
}
