package mechanism

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	mrand "math/rand/v2"
	"runtime"
	"testing"

	"browserfl/internal/cputime"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20"
)

// BenchmarkGenerators times the candidate keystream generators for the
// noise, each filling the Stream's 4 KiB buffer once per call,
// interleaved: ChaCha20 (golang.org/x/crypto, RFC 8439; the stream ChaCha8
// replaced), AES-256-CTR (crypto/aes: AES-NI on amd64, constant-time
// generic Go elsewhere) and ChaCha8 (math/rand/v2, the C2SP chacha8rand
// generator; assembly on amd64 and arm64, generic Go elsewhere), and
// BLAKE2b's XOF (golang.org/x/crypto/blake2b, 64-bit operations). Run it
// natively and under node (GOOS=js GOARCH=wasm, see docs/performance.md).
func BenchmarkGenerators(b *testing.B) {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	var nonce [chacha20.NonceSize]byte
	cc, _ := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	blk, _ := aes.NewCipher(key[:])
	ctr := cipher.NewCTR(blk, make([]byte, aes.BlockSize))
	c8 := mrand.NewChaCha8(key)
	xof, _ := blake2b.NewXOF(blake2b.OutputLengthUnknown, key[:])
	var buf, zero [4096]byte
	fs := []func(){
		func() { cc.XORKeyStream(buf[:], zero[:]) },
		func() { ctr.XORKeyStream(buf[:], zero[:]) },
		func() { c8.Read(buf[:]) },
		func() {
			for i := 0; i < 4096; i += 8 {
				binary.LittleEndian.PutUint64(buf[i:], c8.Uint64())
			}
		},
		func() { xof.Read(buf[:]) },
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tot := make([]int64, len(fs))
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, f := range fs {
			t0 := cputime.Now()
			f()
			tot[k] += cputime.Now() - t0
		}
	}
	b.StopTimer()
	mbs := func(t int64) float64 { return float64(4096) * float64(b.N) / (float64(t) / 1e9) / 1e6 }
	b.ReportMetric(mbs(tot[0]), "chacha20-MB/s")
	b.ReportMetric(mbs(tot[1]), "aes256ctr-MB/s")
	b.ReportMetric(mbs(tot[2]), "chacha8-MB/s")
	b.ReportMetric(mbs(tot[3]), "chacha8-uint64-MB/s")
	b.ReportMetric(mbs(tot[4]), "blake2bxof-MB/s")
}
