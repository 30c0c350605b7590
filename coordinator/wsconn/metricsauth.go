package wsconn

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"browserfl/coordinator/metrics"
)

// MetricsAllowed checks the metrics token (Gate.MetricsToken) of a
// /metrics request; it answers 401 itself when the token is missing.
func (f *Front) MetricsAllowed(w http.ResponseWriter, r *http.Request) bool {
	tok := f.Gate.Config().MetricsToken
	if tok == "" {
		return true
	}
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if got == "" {
		got = r.URL.Query().Get("token")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
		f.Met.Reject(metrics.RejMetricsToken)
		w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
		http.Error(w, "metrics token required", http.StatusUnauthorized)
		return false
	}
	return true
}
