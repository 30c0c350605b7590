package gate

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ErrTrustedProxies is wrapped by ParseTrustedProxies's errors.
var ErrTrustedProxies = errors.New("trusted proxies")

// ParseTrustedProxies parses a comma-separated list of the networks of
// trusted reverse proxies (Gate.TrustedProxies), e.g.
// "10.0.0.0/8,127.0.0.1/32"; a bare address is its own /32 (/128). An
// empty list trusts no proxy. It refuses the old boolean form of
// -trust-proxy ("true", which trusted anyone's X-Forwarded-For), a
// network that covers every address (0.0.0.0/0, ::/0: the same hole),
// and a prefix with bits set beyond its length (10.0.0.1/8 is probably
// a typo for 10.0.0.0/8 or 10.0.0.1/32).
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		switch low := strings.ToLower(part); {
		case low == "true" || low == "false" || low == "t" || low == "f" || low == "1" || low == "0" || low == "yes" || low == "no",
			strings.HasPrefix(part, "-"): // "-trust-proxy -listen :8080": the old form before another flag
			return nil, fmt.Errorf("%w: %q is the old on/off form; -trust-proxy now takes the proxies' networks, comma-separated, "+
				"e.g. -trust-proxy 127.0.0.1/32 for a proxy on this machine or 10.0.0.0/8,127.0.0.1/32 (leave it out to trust no proxy)",
				ErrTrustedProxies, part)
		}
		var p netip.Prefix
		if strings.Contains(part, "/") {
			var err error
			if p, err = netip.ParsePrefix(part); err != nil {
				return nil, fmt.Errorf("%w: %q is not a network like 10.0.0.0/8 or fd00::/8: %v", ErrTrustedProxies, part, err)
			}
		} else {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not a network like 10.0.0.0/8 or an address like 127.0.0.1", ErrTrustedProxies, part)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Zone() != "" {
			return nil, fmt.Errorf("%w: %q: no zones", ErrTrustedProxies, part)
		}
		if p.Bits() == 0 {
			return nil, fmt.Errorf("%w: %q covers every address: anyone could fake X-Forwarded-For", ErrTrustedProxies, part)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%w: %q has address bits beyond /%d (did you mean %s or %s?)",
				ErrTrustedProxies, part, p.Bits(), p.Masked(), netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
		}
		out = append(out, p)
	}
	return out, nil
}

// FormatTrustedProxies is the text form ParseTrustedProxies reads.
func FormatTrustedProxies(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// clientHost returns the host the gate keys a request on: the peer's
// address (RemoteAddr), unless the peer is in trusted; then the
// right-most X-Forwarded-For entry that is not in trusted, walking left
// over the trusted proxies' own entries. Entries left of it were written
// by whoever sent the request and are never read, so a client cannot
// choose its address by sending the header itself. A malformed entry
// stops the walk at the last trusted hop (which then takes the blame),
// and if every entry is a trusted proxy the left-most one is used.
func clientHost(r *http.Request, trusted []netip.Prefix) string {
	if len(trusted) == 0 {
		return r.RemoteAddr
	}
	hop, ok := parseHop(r.RemoteAddr)
	if !ok || !inPrefixes(hop, trusted) {
		return r.RemoteAddr
	}
	xff := r.Header.Values("X-Forwarded-For")
	for i := len(xff) - 1; i >= 0; i-- {
		entries := strings.Split(xff[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, ok := parseHop(strings.TrimSpace(entries[j]))
			if !ok {
				return hop.String()
			}
			if !inPrefixes(a, trusted) {
				return a.String()
			}
			hop = a
		}
	}
	return hop.String()
}

// parseHop parses an address as a peer or an X-Forwarded-For entry gives
// it: "192.0.2.1", "2001:db8::1", or either with a port ("[2001:db8::1]:443").
// An IPv4-mapped IPv6 address is its IPv4 address; a zone is dropped.
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
