// Tests of the netns the e2e tests run their CLIs in.

package providertest

import "testing"

// TestNetnsNoRouteOut proves the sandbox every e2e test runs its CLI in:
// inside the namespace only lo is up and no route leads out.
func TestNetnsNoRouteOut(t *testing.T) {
	if !InNetns(t) {
		return
	}
	if err := CheckNoRouteOut(); err != nil {
		t.Fatal(err)
	}
}
