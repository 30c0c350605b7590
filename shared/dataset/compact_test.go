package dataset

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A compact set hands out exactly FromIDX's samples, for any subset, and
// refuses what FromIDX refuses.
func TestCompactMatchesFromIDX(t *testing.T) {
	const n, f = 7, 6
	im := &IDX{Type: Uint8, Dims: []int{n, 2, 3}, Data: make([]byte, n*f)}
	lab := &IDX{Type: Uint8, Dims: []int{n}, Data: make([]byte, n)}
	for i := range im.Data {
		im.Data[i] = byte(37*i + 11)
	}
	for i := range lab.Data {
		lab.Data[i] = byte(i % 3)
	}
	full, err := FromIDX("x", im, lab, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCompact("x", im, lab, 3)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != n || c.Features != f || !slices.Equal(c.Shape, []int{2, 3}) || !slices.Equal(c.Labels(), full.Labels()) {
		t.Fatalf("compact: len %d features %d shape %v labels %v", c.Len(), c.Features, c.Shape, c.Labels())
	}
	for _, idx := range [][]int{{}, {0}, {6, 0, 3, 3}, {1, 2, 3, 4, 5, 6, 0}} {
		sub, err := c.Subset(idx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := full.Subset(idx)
		if sub.Len() != len(idx) || sub.Features != f || sub.Classes != 3 {
			t.Fatalf("subset %v: %d samples, %d features, %d classes", idx, sub.Len(), sub.Features, sub.Classes)
		}
		for k := range idx {
			if !slices.Equal(sub.Samples[k].X, want.Samples[k].X) || sub.Samples[k].Label != want.Samples[k].Label {
				t.Fatalf("subset %v: sample %d differs from FromIDX's", idx, k)
			}
		}
	}
	for _, idx := range [][]int{{-1}, {n}, {0, n + 5}} {
		if _, err := c.Subset(idx); err == nil {
			t.Errorf("subset %v accepted", idx)
		}
	}
	for _, tc := range []struct{ n, want int }{{0, 0}, {3, 3}, {n, n}, {n + 4, n}} {
		h, err := c.Head(tc.n)
		if err != nil || h.Len() != tc.want {
			t.Errorf("Head(%d): %d samples, %v; want %d", tc.n, h.Len(), err, tc.want)
		}
	}
	if _, err := c.Head(-1); err == nil {
		t.Error("Head(-1) accepted")
	}
	lab.Data[4] = 3
	if _, err := NewCompact("x", im, lab, 3); err == nil {
		t.Error("a label not below the classes accepted")
	}
}

// LoadIDXFile reads raw and gzipped files alike (the stated size lets it
// allocate once) and still refuses a file that is shorter than its header
// says, whatever its trailer claims.
func TestLoadIDXFileStatedSize(t *testing.T) {
	x := &IDX{Type: Uint8, Dims: []int{3, 4, 5}, Data: make([]byte, 60)}
	for i := range x.Data {
		x.Data[i] = byte(i * 7)
	}
	var raw, gz bytes.Buffer
	if err := WriteIDX(&raw, x); err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(&gz)
	WriteIDX(zw, x)
	zw.Close()
	dir := t.TempDir()
	truncated := append(bytes.Clone(raw.Bytes()[:raw.Len()-7]), raw.Bytes()[raw.Len()-4:]...) // 3 bytes short
	var gzShort bytes.Buffer
	zw = gzip.NewWriter(&gzShort)
	zw.Write(raw.Bytes()[:raw.Len()-3])
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"raw", raw.Bytes(), true},
		{"gzip", gz.Bytes(), true},
		{"raw short", truncated[:len(truncated)-3], false},
		{"gzip short", gzShort.Bytes(), false},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadIDXFile(p)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok && (!bytes.Equal(got.Data, x.Data) || !slices.Equal(got.Dims, x.Dims)):
			t.Errorf("%s: read back differs", tc.name)
		case !tc.ok && err == nil:
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// offHeap gives zeroed, writable memory of the size asked, small or large.
func TestOffHeap(t *testing.T) {
	for _, n := range []int{0, 10, offHeapMinForTest, offHeapMinForTest + 4097} {
		b := offHeap(n)
		if len(b) != n {
			t.Fatalf("offHeap(%d): %d bytes", n, len(b))
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("offHeap(%d): byte %d is %d", n, i, b[i])
			}
			b[i] = byte(i)
		}
	}
}

// ShardBlob is EncodeShard of Subset, byte for byte, for any subset, and
// refuses an index out of range.
func TestCompactShardBlob(t *testing.T) {
	const n, f = 9, 6
	im := &IDX{Type: Uint8, Dims: []int{n, 3, 2}, Data: make([]byte, n*f)}
	lab := &IDX{Type: Uint8, Dims: []int{n}, Data: make([]byte, n)}
	for i := range im.Data {
		im.Data[i] = byte(53*i + 7)
	}
	for i := range lab.Data {
		lab.Data[i] = byte(i % 4)
	}
	c, err := NewCompact("x", im, lab, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range [][]int{{0}, {8, 0, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 0}} {
		sub, err := c.Subset(idx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := EncodeShard(sub)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ShardBlob(idx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || cap(got) != len(want) {
			t.Errorf("ShardBlob(%v): %d bytes (cap %d), want EncodeShard's %d", idx, len(got), cap(got), len(want))
		}
	}
	for _, idx := range [][]int{{-1}, {n}, {0, n + 5}} {
		if _, err := c.ShardBlob(idx); err == nil {
			t.Errorf("ShardBlob(%v) accepted", idx)
		}
	}
}
