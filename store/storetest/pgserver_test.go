package storetest_test

import (
	"context"
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestPGServerRestarts: a store over the test's own server fails while it
// is stopped and works again once it is started, on the same pool.
func TestPGServerRestarts(t *testing.T) {
	pg := storetest.StartPG(t)
	ctx := context.Background()
	st, err := store.OpenAndMigrate(ctx, pg.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.LastSeq(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	if _, err := st.LastSeq(ctx, "c"); err == nil {
		t.Fatal("a read succeeded with the server stopped")
	}
	pg.Start()
	if _, err := st.LastSeq(ctx, "c"); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}
