package e2e

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine they started is
// still running when they end (go.uber.org/goleak). The tests' plain
// requests (http.Get, http.DefaultClient) leave keep-alive connections
// in the default transport's pool, each with its two goroutines: those
// are closed first, as an idle pool is not a leak; a connection still in
// use is.
func TestMain(m *testing.M) {
	code := m.Run()
	http.DefaultClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak: goroutines still running after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}
