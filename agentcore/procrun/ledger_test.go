package procrun

import (
	"fmt"
	"slices"
	"testing"
)

func TestLedger(t *testing.T) {
	var l Ledger[int]
	for i, id := range []string{"a", "b", "c"} {
		if !l.Add(id, i) {
			t.Fatalf("Add(%s) refused", id)
		}
	}
	if l.Add("b", 9) {
		t.Error("a duplicate id was added")
	}
	if v, ok := l.Get("b"); !ok || v != 1 {
		t.Errorf("Get(b) = %d, %v", v, ok)
	}
	l.Drop("b")
	l.Drop("zz")
	if l.Has("b") || !l.Has("c") {
		t.Error("Drop closed the wrong request")
	}
	l.Add("d", 3)
	got := CloseAll(&l, func(id string, v int) string { return fmt.Sprint(id, v) })
	if !slices.Equal(got, []string{"a0", "c2", "d3"}) {
		t.Errorf("CloseAll = %q, want arrival order a0 c2 d3", got)
	}
	if l.Has("a") || len(CloseAll(&l, func(string, int) string { return "" })) != 0 {
		t.Error("CloseAll left requests open")
	}
}
