package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"browserfl/coordinator/bus"
)

// writeCert writes a PEM certificate and key for 127.0.0.1 signed by ca
// (self-signed when ca is nil) and returns their paths and the parsed
// certificate and key.
func writeCert(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPath, keyPath string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	parent, signer := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certPath, keyPath, cert, key
}

// TestNATSTLSBetweenComponents runs the embedded NATS server with TLS and
// client certificates (what -nats-ca/-nats-cert/-nats-key configure),
// listening on every interface (allowed with TLS only): a component
// with a certificate from the cluster's CA and its own key connects;
// one without a certificate, with one from another CA, with a key the
// server does not know, or in plaintext is refused.
func TestNATSTLSBetweenComponents(t *testing.T) {
	dir := t.TempDir()
	caPath, _, ca, caKey := writeCert(t, dir, "ca", nil, nil)
	srvCert, srvKey, _, _ := writeCert(t, dir, "nats", ca, caKey)
	cliCert, cliKey, _, _ := writeCert(t, dir, "edge", ca, caKey)
	_, _, other, otherKey := writeCert(t, dir, "other-ca", nil, nil)
	badCert, badKey, _, _ := writeCert(t, dir, "intruder", other, otherKey)
	keys, err := bus.EnsureKeys(filepath.Join(dir, "nats"), []string{"e0"})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := bus.EnsureKeys(filepath.Join(dir, "elsewhere"), []string{"e0"})
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := bus.EdgeSeedFile(keys.Dir, "e0"), bus.EdgeSeedFile(stranger.Dir, "e0")

	ns, err := bus.StartNATS(bus.NATSServerConfig{Listen: "0.0.0.0:0", Keys: keys,
		TLS: bus.NATSTLS{CA: caPath, Cert: srvCert, Key: srvKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	url := fmt.Sprintf("tls://127.0.0.1:%d", ns.Addr().(*net.TCPAddr).Port)
	// Without reconnect-on-failure the refusals show at once.
	try := func(tls bus.NATSTLS, seed string) error {
		nc, err := bus.ConnectNATSOnce(bus.NATSClientConfig{URL: url, Name: "t", NKey: seed, TLS: tls, Log: quietLogger()})
		if err != nil {
			return err
		}
		defer nc.Close()
		// A round trip shows whether the connection was accepted.
		return nc.Flush()
	}
	if err := try(bus.NATSTLS{CA: caPath, Cert: cliCert, Key: cliKey}, mine); err != nil {
		t.Fatalf("a component with the cluster's certificate and key was refused: %v", err)
	}
	for name, tc := range map[string]struct {
		tls  bus.NATSTLS
		seed string
	}{
		"no client certificate":         {bus.NATSTLS{CA: caPath}, mine},
		"certificate from another CA":   {bus.NATSTLS{CA: caPath, Cert: badCert, Key: badKey}, mine},
		"right certificate, stray key":  {bus.NATSTLS{CA: caPath, Cert: cliCert, Key: cliKey}, theirs},
		"plaintext to the TLS listener": {bus.NATSTLS{}, mine},
	} {
		if err := try(tc.tls, tc.seed); err == nil {
			t.Errorf("%s: connected, want refused", name)
		}
	}
}

// TestStartNATSRefusesAnOpenBus: the embedded server does not start
// without credentials, nor listening off loopback (every interface, a
// LAN address) without TLS; on loopback with the keys it starts.
func TestStartNATSRefusesAnOpenBus(t *testing.T) {
	keys, err := bus.EnsureKeys(filepath.Join(t.TempDir(), "nats"), []string{"e0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		listen string
		keys   *bus.Keys
		ok     bool
	}{
		{"127.0.0.1:0", keys, true},
		{"localhost:0", keys, true},
		{"[::1]:0", keys, true},
		{"127.0.0.1:0", nil, false},
		{"127.0.0.1:0", &bus.Keys{}, false},
		{"0.0.0.0:0", keys, false},
		{":0", keys, false},
		{"[::]:0", keys, false},
		{"192.0.2.1:0", keys, false},
	} {
		ns, err := bus.StartNATS(bus.NATSServerConfig{Listen: tc.listen, Keys: tc.keys})
		if ns != nil {
			ns.Shutdown()
		}
		switch {
		case tc.ok && err != nil:
			// [::1] may be missing on the machine: only the refusal counts.
			if !errors.Is(err, bus.ErrInsecure) && tc.listen == "[::1]:0" {
				continue
			}
			t.Errorf("%s with keys %v: %v", tc.listen, tc.keys != nil, err)
		case !tc.ok && !errors.Is(err, bus.ErrInsecure):
			t.Errorf("%s with keys %v: %v, want ErrInsecure", tc.listen, tc.keys != nil, err)
		}
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
