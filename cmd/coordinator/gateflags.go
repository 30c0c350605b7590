package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"browserfl/coordinator/gate"
	"browserfl/coordinator/site"
)

// proxies is -trust-proxy: the networks of trusted reverse proxies
// (gate.ParseTrustedProxies), from the command line, BFL_TRUST_PROXY
// or the config file's "trust_proxy" (a string like the flag's, or a list
// of strings).
type proxies []netip.Prefix

func (p *proxies) String() string { return gate.FormatTrustedProxies(*p) }

func (p *proxies) Set(s string) error {
	ps, err := gate.ParseTrustedProxies(s)
	if err != nil {
		return err
	}
	*p = ps
	return nil
}

func (p *proxies) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return p.Set(s)
	}
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		return p.Set(strings.Join(list, ","))
	}
	var old bool
	if err := json.Unmarshal(b, &old); err == nil {
		return p.Set(fmt.Sprint(old)) // the old boolean form: its clear error
	}
	return fmt.Errorf("%w: want a string like \"10.0.0.0/8,127.0.0.1/32\" or a list of networks, got %s", gate.ErrTrustedProxies, b)
}

func (p proxies) MarshalJSON() ([]byte, error) {
	return json.Marshal(gate.FormatTrustedProxies(p))
}

// metricsToken sets o.MetricsToken for a server listening at addr
// (site.MetricsTokenFor): off loopback without -metrics-token a
// token is generated, and generated says so (printMetricsToken).
func (o *options) metricsToken(addr net.Addr) (generated bool, err error) {
	o.MetricsToken, generated, err = site.MetricsTokenFor(addr, o.MetricsToken)
	return generated, err
}

// printMetricsToken prints a generated /metrics token with the join
// lines (stderr, like the teacher link; never logged).
func printMetricsToken(w io.Writer, token string) {
	fmt.Fprintf(w, "  metrics:   /metrics needs \"Authorization: Bearer %s\" (or ?token=): made up at start because the coordinator listens beyond this machine; -metrics-token sets a fixed one\n\n", token)
}
