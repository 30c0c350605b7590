package coordinator_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"browserfl/shared/dataset"
)

// TestDemoShardChunksHTTP: a page that fetches its shard in chunks
// (?from=&count=) gets, chunk after chunk, exactly the shard the whole
// request serves, in the same order, the images and labels of each
// chunk paired; the shard's size comes in X-Shard-Samples. Malformed
// parameters get 400, a chunk past the end 416, each counted as a
// demo_range rejection. A handler that ignored the range, or served a
// chunk of another shard, would fail the comparison.
func TestDemoShardChunksHTTP(t *testing.T) {
	d := newDemoAPI(t, nil)
	sh := d.sh
	var cookies []*http.Cookie
	get := func(path string) (int, http.Header, []byte) {
		t.Helper()
		resp, b := d.get(path, cookies)
		if c := resp.Cookies(); len(c) > 0 {
			cookies = c
		}
		return resp.StatusCode, resp.Header, b
	}
	decode := func(im, lab []byte) dataset.Set {
		t.Helper()
		s, err := dataset.ReadSet("chunk", bytes.NewReader(im), bytes.NewReader(lab), 10)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, _, im := get("/api/demo/images?code=join-me")
	_, _, lab := get("/api/demo/labels?code=join-me")
	whole := decode(im, lab)
	if whole.Len() != 15 {
		t.Fatalf("whole shard of %d samples, want 15", whole.Len())
	}
	var got []dataset.Sample
	for _, q := range []string{"from=0&count=4", "from=4&count=4", "count=3&from=8", "from=11&count=999"} {
		code, hd, im := get("/api/demo/images?code=join-me&" + q)
		code2, _, lab := get("/api/demo/labels?code=join-me&" + q)
		if code != 200 || code2 != 200 {
			t.Fatalf("%s: HTTP %d and %d", q, code, code2)
		}
		if hd.Get("X-Shard-Samples") != "15" || hd.Get("X-Shard-Index") != "0" {
			t.Errorf("%s: X-Shard-Samples %q, X-Shard-Index %q; want 15 and 0", q, hd.Get("X-Shard-Samples"), hd.Get("X-Shard-Index"))
		}
		got = append(got, decode(im, lab).Samples...)
	}
	if len(got) != whole.Len() {
		t.Fatalf("chunks hold %d samples, the shard %d", len(got), whole.Len())
	}
	for i, s := range got {
		if w := whole.Samples[i]; s.X[0] != w.X[0] || s.Label != w.Label {
			t.Fatalf("chunk sample %d is %v/%d, the shard's %v/%d", i, s.X, s.Label, w.X, w.Label)
		}
	}
	bad := map[string]int{
		"from=-1": 400, "from=abc": 400, "from=1&from=2": 400, "count=0": 400, "from=": 400,
		"count=1234567890": 400, "from=%2B3": 400, "from=0x1": 400, "from=15": 416, "from=999999999": 416,
	}
	for q, want := range bad {
		for _, part := range []string{"images", "labels"} {
			if code, _, body := get("/api/demo/" + part + "?code=join-me&" + q); code != want {
				t.Errorf("%s?%s: HTTP %d (%s), want %d", part, q, code, body, want)
			}
		}
	}
	// Malformed requests of a new page (no cookie) are refused before
	// a shard is handed out: they cannot use up the distinct shards.
	cookies = nil
	before := sh.Stats()
	for _, q := range []string{"from=-1", "count=0", "from=abc", "count=1234567890"} {
		if code, _, _ := get("/api/demo/images?code=join-me&" + q); code != 400 {
			t.Errorf("a new page's %s: HTTP %d, want 400", q, code)
		}
		cookies = nil
	}
	if after := sh.Stats(); after.HandedOut != before.HandedOut || after.Distinct != before.Distinct {
		t.Errorf("malformed requests handed out shards: %+v before, %+v after", before, after)
	}
	_, _, metrics := get("/metrics")
	if want := `browserfl_rejections_total{kind="demo_range"} 24`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %q", want)
	}
	if code, _, _ := get("/api/demo/images?code=wrong&from=0&count=1"); code == 200 {
		t.Error("a chunk with a wrong join code was served")
	}
}
