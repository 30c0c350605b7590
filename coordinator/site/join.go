package site

import (
	"net"
	"net/url"
	"strings"

	"rsc.io/qr"
)

// This file holds where devices join: the join addresses (every
// non-loopback address of the machine, virtual interfaces last), their
// URLs with the join code, and the QR codes of those URLs (a PNG for
// the dashboard, half blocks for a terminal).

// JoinInfo says how devices reach this coordinator; cmd/coordinator fills
// it from its listener (JoinURLs) and passes it in Assets.Join.
type JoinInfo struct {
	// URLs are the join URLs, the code included, one per address phones
	// on the same network can use; the first is the one shown big and
	// drawn as the QR code. Empty: the dashboard uses the address it was
	// opened at.
	URLs []string `json:"urls"`
	// LoopbackOnly is true when the coordinator listens on a loopback
	// address only: no other machine can join.
	LoopbackOnly bool `json:"loopback_only,omitempty"`
	// LANURLs, with LoopbackOnly, are the join URLs phones could use
	// once the coordinator listens on every address at the same port
	// (-listen :PORT): what the dashboard tells the teacher to do.
	LANURLs []string `json:"lan_urls,omitempty"`
}

// LANHint is what to do when the coordinator listens on loopback
// only: listen on every address at the port of its join URLs (8080 if
// they have none).
func (j JoinInfo) LANHint() string {
	port := "8080"
	if len(j.URLs) > 0 {
		if u, err := url.Parse(j.URLs[0]); err == nil && u.Port() != "" {
			port = u.Port()
		}
	}
	return `listening on this machine only: phones cannot join; to listen on the LAN, start it with -listen :` + port +
		` (with make run: RUNFLAGS="-listen :` + port + `")`
}

// LANHosts returns the hosts (IP literals, IPv6 in brackets) of addrs
// that another machine on the network can reach: loopback, unspecified,
// multicast and link-local addresses are left out (an IPv6 link-local
// address needs a zone, which browsers do not accept in a URL, and an
// IPv4 link-local one means the interface got no address from the
// network). IPv4 comes first, then IPv6, each in the order given, without
// duplicates.
func LANHosts(addrs []net.Addr) []string {
	var v4, v6 []string
	seen := map[string]bool{}
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		case *net.TCPAddr:
			ip = a.IP
		default:
			ip = net.ParseIP(strings.SplitN(a.String(), "/", 2)[0])
		}
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() || ip.IsMulticast() ||
			ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
			continue
		}
		s := ip.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		if ip.To4() != nil {
			v4 = append(v4, s)
		} else {
			v6 = append(v6, "["+s+"]")
		}
	}
	return append(v4, v6...)
}

// Interface is one network interface as MachineAddrs sees it.
type Interface struct {
	Name  string
	Up    bool
	Addrs []net.Addr
}

// virtualPrefixes name interfaces that are usually not the classroom's
// network (container bridges, virtual machines, VPN tunnels): their
// addresses are listed after the others, so that the first join URL
// (the one drawn as the QR code) is the Wi-Fi's or the Ethernet's.
var virtualPrefixes = []string{"docker", "br-", "veth", "virbr", "vboxnet", "vmnet", "cni", "flannel", "podman",
	"lxc", "lxd", "tun", "tap", "wg", "tailscale", "zt", "utun", "ppp"}

// OrderAddrs returns the addresses of the interfaces that are up, those
// of virtual interfaces (virtualPrefixes) last.
func OrderAddrs(ifs []Interface) []net.Addr {
	var first, last []net.Addr
	for _, it := range ifs {
		if !it.Up {
			continue
		}
		virtual := false
		for _, p := range virtualPrefixes {
			if strings.HasPrefix(strings.ToLower(it.Name), p) {
				virtual = true
				break
			}
		}
		if virtual {
			last = append(last, it.Addrs...)
		} else {
			first = append(first, it.Addrs...)
		}
	}
	return append(first, last...)
}

// MachineAddrs returns this machine's interface addresses in OrderAddrs
// order.
func MachineAddrs() ([]net.Addr, error) {
	nifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var ifs []Interface
	for _, ni := range nifs {
		addrs, err := ni.Addrs()
		if err != nil {
			continue
		}
		ifs = append(ifs, Interface{Name: ni.Name, Up: ni.Flags&net.FlagUp != 0, Addrs: addrs})
	}
	return OrderAddrs(ifs), nil
}

// JoinURLs returns the join URLs for a listener bound to bound (its
// actual address, e.g. "[::]:8080" or "127.0.0.1:8080"): one per LAN host
// of ifaces when the listener takes every address, the bound address
// itself when it is a specific non-loopback one, and localhost with
// LoopbackOnly when it is loopback.
func JoinURLs(bound, scheme, code string, ifaces []net.Addr) JoinInfo {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return JoinInfo{}
	}
	join := func(h string) string { // h: a LANHosts host (IPv6 bracketed)
		return scheme + "://" + h + ":" + port + "/?code=" + url.QueryEscape(code)
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil || ip.IsLoopback():
		info := JoinInfo{URLs: []string{join("localhost")}, LoopbackOnly: ip != nil || host == "localhost"}
		if info.LoopbackOnly {
			for _, h := range LANHosts(ifaces) {
				info.LANURLs = append(info.LANURLs, join(h))
			}
		}
		return info
	case ip.IsUnspecified():
		var info JoinInfo
		for _, h := range LANHosts(ifaces) {
			// A listener on 0.0.0.0 takes IPv4 only.
			if ip.To4() != nil && strings.HasPrefix(h, "[") {
				continue
			}
			info.URLs = append(info.URLs, join(h))
		}
		if len(info.URLs) == 0 {
			// No network: only this machine can join.
			info.URLs = []string{join("localhost")}
		}
		return info
	}
	h := ip.String()
	if ip.To4() == nil {
		h = "[" + h + "]"
	}
	return JoinInfo{URLs: []string{join(h)}}
}

// QRPNG returns text as a QR code PNG (error correction level M, 8 pixels
// a module, a quiet zone of 4 modules).
func QRPNG(text string) ([]byte, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return nil, err
	}
	return c.PNG(), nil
}

// TerminalQR returns text as a QR code for a terminal: two modules a
// line with half blocks, light modules drawn (a dark terminal shows dark
// modules on a light ground), with a quiet zone of 2 modules.
func TerminalQR(text string) (string, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return "", err
	}
	const quiet = 2
	light := func(x, y int) bool { return !c.Black(x, y) } // outside the code: light
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		b.WriteString("  ")
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bot := light(x, y), light(x, y+1) && y+1 < c.Size+quiet
			switch {
			case top && bot:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bot:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// WithCode returns info with the join code of each of its URLs set to
// code (a host builds the URLs once and makes a new code for every
// session). URLs is never nil in the result; LANURLs stays nil if it was.
func (info JoinInfo) WithCode(code string) JoinInfo {
	urls := make([]string, len(info.URLs))
	for i, u := range info.URLs {
		urls[i] = withCode(u, code)
	}
	info.URLs = urls
	if info.LANURLs != nil {
		lan := make([]string, len(info.LANURLs))
		for i, u := range info.LANURLs {
			lan[i] = withCode(u, code)
		}
		info.LANURLs = lan
	}
	return info
}

// withCode returns join URL u with its code query set to code.
func withCode(u, code string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("code", code)
	p.RawQuery = q.Encode()
	return p.String()
}
