// Ledger: a parser's open requests, in the order they were asked.

package procrun

import (
	"iter"
	"slices"
)

// Ledger holds what a sans-IO parser keeps of each open request (the native
// id to answer, what was asked), by interaction id, in the order the requests
// arrived: so that the ones still open when the turn ends are resolved in
// that order. The zero Ledger is empty and ready.
type Ledger[V any] struct {
	m     map[string]V
	order []string
}

// Add records v as open request id; it reports false, and records nothing,
// when id is already open (a duplicate request, agent.ErrDuplicateRequest).
func (l *Ledger[V]) Add(id string, v V) bool {
	if _, dup := l.m[id]; dup {
		return false
	}
	if l.m == nil {
		l.m = map[string]V{}
	}
	l.m[id] = v
	l.order = append(l.order, id)
	return true
}

// Get returns open request id.
func (l *Ledger[V]) Get(id string) (V, bool) {
	v, ok := l.m[id]
	return v, ok
}

// Has reports whether request id is open.
func (l *Ledger[V]) Has(id string) bool {
	_, ok := l.m[id]
	return ok
}

// Drop closes request id (nothing if it is not open).
func (l *Ledger[V]) Drop(id string) {
	if _, ok := l.m[id]; !ok {
		return
	}
	delete(l.m, id)
	if i := slices.Index(l.order, id); i >= 0 {
		l.order = slices.Delete(l.order, i, i+1)
	}
}

// All yields the open requests in arrival order.
func (l *Ledger[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, id := range l.order {
			if !yield(id, l.m[id]) {
				return
			}
		}
	}
}

// CloseAll closes every open request and returns what end made of each, in
// arrival order (e.g. its interaction.resolved turn_ended).
func CloseAll[V, E any](l *Ledger[V], end func(id string, v V) E) []E {
	var out []E
	for id, v := range l.All() {
		out = append(out, end(id, v))
	}
	clear(l.m)
	l.order = l.order[:0]
	return out
}
