package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// writeIDXDir writes a training and a test set of n and m samples of 3x2
// pixels in 4 classes into a new directory, gzipped or raw, and returns it.
func writeIDXDir(t *testing.T, n, m int, gzipped bool) string {
	t.Helper()
	dir := t.TempDir()
	put := func(base string, x *IDX) {
		var b bytes.Buffer
		if gzipped {
			zw := gzip.NewWriter(&b)
			if err := WriteIDX(zw, x); err != nil {
				t.Fatal(err)
			}
			zw.Close()
			base += ".gz"
		} else if err := WriteIDX(&b, x); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, base), b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		images, labels string
		n, seed        int
	}{{TrainImagesFile, TrainLabelsFile, n, 11}, {TestImagesFile, TestLabelsFile, m, 5}} {
		im := &IDX{Type: Uint8, Dims: []int{f.n, 3, 2}, Data: make([]byte, f.n*6)}
		lab := &IDX{Type: Uint8, Dims: []int{f.n}, Data: make([]byte, f.n)}
		for i := range im.Data {
			im.Data[i] = byte(31*i + f.seed)
		}
		for i := range lab.Data {
			lab.Data[i] = byte((i * f.seed) % 4)
		}
		put(f.images, im)
		put(f.labels, lab)
	}
	return dir
}

// A set whose pixels are on disk hands out exactly the samples and shard
// blobs of the same set in memory, for any subset; it leaves no file in
// its scratch directory (where the system unlinks open files) and stops
// reading once closed.
func TestOnDiskMatchesInMemory(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		dir := writeIDXDir(t, 13, 5, gzipped)
		memTrain, memTest, err := LoadIDXDirCompact(dir, "x", 4)
		if err != nil {
			t.Fatal(err)
		}
		scratch := t.TempDir()
		train, test, err := LoadIDXDirOnDisk(dir, "x", 4, scratch)
		if err != nil {
			t.Fatal(err)
		}
		if !train.OnDisk() || !test.OnDisk() || memTrain.OnDisk() {
			t.Fatalf("on disk: %v %v, in memory: %v", train.OnDisk(), test.OnDisk(), memTrain.OnDisk())
		}
		for _, p := range []struct{ disk, mem *Compact }{{train, memTrain}, {test, memTest}} {
			if p.disk.Len() != p.mem.Len() || p.disk.Features != 6 || !slices.Equal(p.disk.Shape, []int{3, 2}) || !slices.Equal(p.disk.Labels(), p.mem.Labels()) {
				t.Fatalf("%s: len %d features %d shape %v", p.disk.Name, p.disk.Len(), p.disk.Features, p.disk.Shape)
			}
			n := p.disk.Len()
			for _, idx := range [][]int{{}, {0}, {n - 1, 0, 2, 2}, {4, 3, 2, 1, 0}} {
				got, err := p.disk.Subset(idx)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := p.mem.Subset(idx)
				for k := range idx {
					if !slices.Equal(got.Samples[k].X, want.Samples[k].X) || got.Samples[k].Label != want.Samples[k].Label {
						t.Fatalf("%s (gzipped %v): subset %v: sample %d differs from the set in memory", p.disk.Name, gzipped, idx, k)
					}
				}
				gb, err := p.disk.ShardBlob(idx)
				if err != nil {
					t.Fatal(err)
				}
				wb, _ := p.mem.ShardBlob(idx)
				if !bytes.Equal(gb, wb) {
					t.Fatalf("%s (gzipped %v): shard blob of %v differs from the set in memory", p.disk.Name, gzipped, idx)
				}
			}
			for _, idx := range [][]int{{-1}, {n}} {
				if _, err := p.disk.Subset(idx); err == nil {
					t.Errorf("subset %v accepted", idx)
				}
				if _, err := p.disk.ShardBlob(idx); err == nil {
					t.Errorf("shard blob %v accepted", idx)
				}
			}
		}
		if left, _ := os.ReadDir(scratch); runtime.GOOS != "windows" && len(left) != 0 {
			t.Errorf("%d files left in the scratch directory", len(left))
		}
		if err := train.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := train.Subset([]int{0}); err == nil {
			t.Error("a closed set still reads")
		}
		test.Close()
	}
}

// Loading onto disk refuses what loading into memory refuses (a file
// shorter than its header says, bytes after the payload, no scratch
// directory), leaving no file behind, and says when the files are
// missing.
func TestOnDiskRefuses(t *testing.T) {
	dir := writeIDXDir(t, 4, 2, false)
	p := filepath.Join(dir, TrainImagesFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{{"short", raw[:len(raw)-1], ErrTruncated}, {"trailing", append(bytes.Clone(raw), 0), ErrTrailingData}} {
		if err := os.WriteFile(p, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		scratch := t.TempDir()
		if _, _, err := LoadIDXDirOnDisk(dir, "x", 4, scratch); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if left, _ := os.ReadDir(scratch); len(left) != 0 {
			t.Errorf("%s: %d files left in the scratch directory", tc.name, len(left))
		}
	}
	if _, _, err := LoadIDXDirOnDisk(dir, "x", 4, ""); err == nil {
		t.Error("no scratch directory accepted")
	}
	if _, _, err := LoadIDXDirOnDisk(t.TempDir(), "x", 4, t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: %v", err)
	}
}

// Fashion-MNIST on disk gives the demo shards and the evaluation samples
// of Fashion-MNIST in memory, byte for byte.
func TestOnDiskFashionMNIST(t *testing.T) {
	task, err := LookupTask("fashion")
	if err != nil {
		t.Fatal(err)
	}
	memTrain, memTest, err := task.LoadCompact("")
	if err != nil {
		t.Fatalf("%v (run `make setup`)", err)
	}
	train, test, err := task.LoadOnDisk("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer train.Close()
	defer test.Close()
	st, err := NewShardStream(train.Labels(), 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	part, err := st.Next(6400)
	if err != nil {
		t.Fatal(err)
	}
	got, err := train.ShardBlob(part)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := memTrain.ShardBlob(part)
	if !bytes.Equal(got, want) {
		t.Error("a demo shard from disk differs from the one from memory")
	}
	a, err := test.Head(2000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := memTest.Head(2000)
	for i := range a.Samples {
		if !slices.Equal(a.Samples[i].X, b.Samples[i].X) || a.Samples[i].Label != b.Samples[i].Label {
			t.Fatalf("test sample %d from disk differs from memory", i)
		}
	}
	if _, _, err := task.LoadOnDisk("", ""); err == nil {
		t.Error("no scratch directory accepted")
	}
}
