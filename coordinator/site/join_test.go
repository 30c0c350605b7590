package site

import (
	"net"
	"reflect"
	"testing"
)

func ipnet(s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

// TestLANHosts: loopback, link-local (IPv4 and IPv6), multicast and
// unspecified addresses are left out; IPv4 comes first; duplicates go.
func TestLANHosts(t *testing.T) {
	tests := []struct {
		name  string
		addrs []net.Addr
		want  []string
	}{
		{"none", nil, nil},
		{"loopback only", []net.Addr{ipnet("127.0.0.1/8"), ipnet("::1/128")}, nil},
		{"wifi and loopback", []net.Addr{ipnet("127.0.0.1/8"), ipnet("192.168.1.23/24"), ipnet("::1/128")}, []string{"192.168.1.23"}},
		{"ipv6 link-local is left out, global kept after ipv4",
			[]net.Addr{ipnet("fe80::1c2a:3bff:fe4d:5e6f/64"), ipnet("2001:db8::42/64"), ipnet("10.0.0.5/8")},
			[]string{"10.0.0.5", "[2001:db8::42]"}},
		{"ipv4 link-local (no DHCP) is left out", []net.Addr{ipnet("169.254.10.20/16"), ipnet("172.16.4.4/12")}, []string{"172.16.4.4"}},
		{"unique local ipv6 kept", []net.Addr{ipnet("fd00::2/64")}, []string{"[fd00::2]"}},
		{"duplicates and other address types", []net.Addr{ipnet("192.168.1.23/24"), &net.IPAddr{IP: net.ParseIP("192.168.1.23")},
			&net.TCPAddr{IP: net.ParseIP("192.168.7.1"), Port: 80}, ipnet("0.0.0.0/0"), ipnet("224.0.0.251/32")},
			[]string{"192.168.1.23", "192.168.7.1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LANHosts(tc.addrs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("LANHosts = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJoinURLs: a listener on every address gets one URL per LAN host
// (IPv4 only for 0.0.0.0); loopback says so and lists the URLs phones
// would use with -listen :PORT; a specific address is used as is.
func TestJoinURLs(t *testing.T) {
	ifaces := []net.Addr{ipnet("127.0.0.1/8"), ipnet("192.168.1.23/24"), ipnet("fe80::1/64"), ipnet("2001:db8::42/64")}
	tests := []struct {
		bound    string
		want     []string
		loopback bool
		lan      []string
	}{
		{"[::]:8080", []string{"http://192.168.1.23:8080/?code=K7", "http://[2001:db8::42]:8080/?code=K7"}, false, nil},
		{"0.0.0.0:8080", []string{"http://192.168.1.23:8080/?code=K7"}, false, nil},
		{"127.0.0.1:8080", []string{"http://localhost:8080/?code=K7"}, true,
			[]string{"http://192.168.1.23:8080/?code=K7", "http://[2001:db8::42]:8080/?code=K7"}},
		{"[::1]:9000", []string{"http://localhost:9000/?code=K7"}, true,
			[]string{"http://192.168.1.23:9000/?code=K7", "http://[2001:db8::42]:9000/?code=K7"}},
		{"192.168.1.23:8080", []string{"http://192.168.1.23:8080/?code=K7"}, false, nil},
		{"[2001:db8::42]:8080", []string{"http://[2001:db8::42]:8080/?code=K7"}, false, nil},
	}
	for _, tc := range tests {
		got := JoinURLs(tc.bound, "http", "K7", ifaces)
		if !reflect.DeepEqual(got.URLs, tc.want) || got.LoopbackOnly != tc.loopback || !reflect.DeepEqual(got.LANURLs, tc.lan) {
			t.Errorf("JoinURLs(%s) = %q loopback %v LAN %q, want %q loopback %v LAN %q", tc.bound, got.URLs, got.LoopbackOnly, got.LANURLs,
				tc.want, tc.loopback, tc.lan)
		}
	}
	// No network at all: only this machine can join, via localhost.
	if got := JoinURLs("[::]:8080", "https", "a b", nil); !reflect.DeepEqual(got.URLs, []string{"https://localhost:8080/?code=a+b"}) {
		t.Errorf("no interfaces: %q", got.URLs)
	}
}

// TestOrderAddrs: interfaces that are down are skipped; container
// bridges, virtual machines and tunnels come after the Wi-Fi, so the
// first join URL (the QR code's) is the classroom network's.
func TestOrderAddrs(t *testing.T) {
	ifs := []Interface{
		{Name: "lo", Up: true, Addrs: []net.Addr{ipnet("127.0.0.1/8")}},
		{Name: "docker0", Up: true, Addrs: []net.Addr{ipnet("172.17.0.1/16")}},
		{Name: "enp3s0", Up: false, Addrs: []net.Addr{ipnet("10.1.2.3/24")}},
		{Name: "wlp2s0", Up: true, Addrs: []net.Addr{ipnet("192.168.1.23/24"), ipnet("fe80::1/64")}},
		{Name: "tailscale0", Up: true, Addrs: []net.Addr{ipnet("100.101.102.103/32")}},
	}
	got := LANHosts(OrderAddrs(ifs))
	want := []string{"192.168.1.23", "172.17.0.1", "100.101.102.103"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hosts %q, want %q", got, want)
	}
}
