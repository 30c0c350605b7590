package e2e

import (
	"net"
	"net/http"
	"os"
	"regexp"
	"testing"

	"browserfl/internal/loopback"
)

// TestMetricsOffLoopback: the real coordinator listening beyond this
// machine without -metrics-token makes up a token, prints it with the
// join lines, and /metrics answers 401 without it and 200 with it; on
// loopback /metrics stays open (make run's default).
func TestMetricsOffLoopback(t *testing.T) {
	bin := coordinatorBinary(t)
	tests := []struct {
		name, listen string
		open         bool
	}{
		{"all interfaces", "0.0.0.0", false},
		{"loopback", "127.0.0.1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, port, _ := net.SplitHostPort(loopback.Addr(t))
			logf, err := os.CreateTemp(t.TempDir(), "coordinator-*.log")
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			coord := &process{t: t, bin: bin, addr: net.JoinHostPort(tc.listen, port), dataDir: t.TempDir(), log: logf,
				args: []string{"-dataset", "none"}}
			coord.start()
			defer coord.stop()
			out, err := os.ReadFile(logf.Name())
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`/metrics needs "Authorization: Bearer ([0-9a-f]{32})"`).FindSubmatch(out)
			get := func(auth string) int {
				req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/metrics", nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if tc.open {
				if m != nil || get("") != http.StatusOK {
					t.Errorf("on loopback: token printed %v, /metrics without a token %d; want open", m != nil, get(""))
				}
				return
			}
			if m == nil {
				t.Fatalf("no metrics token printed:\n%s", out)
			}
			if s := get(""); s != http.StatusUnauthorized {
				t.Errorf("/metrics without the token: %d, want 401", s)
			}
			if s := get("Bearer " + string(m[1])); s != http.StatusOK {
				t.Errorf("/metrics with the printed token: %d, want 200", s)
			}
		})
	}
}
