package store_test

import (
	"testing"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestMatrixAccount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		const u = "@bot:example.org"
		if _, ok, err := st.MatrixLogin(ctx, u); ok || err != nil {
			t.Fatalf("empty store: ok %v err %v", ok, err)
		}
		if nb, f, err := st.MatrixSync(ctx, u); nb != "" || f != "" || err != nil {
			t.Fatalf("empty sync %q %q %v", nb, f, err)
		}
		// The sync position may be saved before the login and survives it.
		if err := st.SaveMatrixNextBatch(ctx, u, "s1"); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveMatrixLogin(ctx, u, []byte(`{"device_id":"D1"}`)); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveMatrixFilterID(ctx, u, "f1"); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveMatrixNextBatch(ctx, u, "s2"); err != nil {
			t.Fatal(err)
		}
		login, ok, err := st.MatrixLogin(ctx, u)
		if err != nil || !ok || string(login) != `{"device_id":"D1"}` {
			t.Fatalf("login %q %v %v", login, ok, err)
		}
		if nb, f, err := st.MatrixSync(ctx, u); nb != "s2" || f != "f1" || err != nil {
			t.Fatalf("sync %q %q %v", nb, f, err)
		}
		if _, ok, _ := st.MatrixLogin(ctx, "@other:example.org"); ok {
			t.Fatal("another user's login found")
		}
	})
}
