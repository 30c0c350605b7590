package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// pageRows reads the rows a page stored for source src (IndexedDB, CSV
// text) and parses them with d: these are the rows that must never leave.
func pageRows(t *testing.T, b *browser, code, src string, d *task.Definition) task.Rows {
	t.Helper()
	var raw []int
	expr := fmt.Sprintf(`new Promise((ok, fail) => {
  const r = indexedDB.open(%q);
  r.onerror = () => fail(String(r.error));
  r.onsuccess = () => {
    const g = r.result.transaction("kv").objectStore("kv").get(%q);
    g.onsuccess = () => { const v = g.result; r.result.close(); ok(v ? Array.from(v) : []); };
    g.onerror = () => fail(String(g.error));
  };
})`, "browserfl:"+wire.NormalizeJoinCode(code), "data/"+src+"/rows")
	if err := b.run(60*time.Second, chromedp.Evaluate(expr, &raw, awaitPromise)); err != nil {
		t.Fatalf("reading %s rows: %v", src, err)
	}
	if len(raw) == 0 {
		return task.Rows{}
	}
	out := make([]byte, len(raw))
	for i, v := range raw {
		out[i] = byte(v)
	}
	rows, refused, err := d.ReadCSV(bytes.NewReader(out))
	if err != nil || len(refused) > 0 {
		t.Fatalf("%s rows stored: %v, refused %v", src, err, refused)
	}
	return rows
}

// rowPatterns are byte patterns of a page's rows: each text value of at
// least minBin bytes (in any frame; minText for text frames, whose JSON
// carries words of the protocol), and each row's encoded features as
// float32 and float64 little-endian values (the span from its first to
// its last nonzero feature).
type rowPatterns struct {
	words   []string
	encoded [][]byte
}

const (
	minBin  = 6 // a 6-byte word turns up by chance in a 10 kB random frame with probability 4e-11
	minText = 8 // longer than any word the protocol's JSON spells
)

func newRowPatterns(d *task.Definition, sets []task.Rows) rowPatterns {
	var p rowPatterns
	for _, rows := range sets {
		for _, vals := range rows.Values {
			for i, f := range d.Features {
				if f.Kind == task.Text && len(vals[i]) >= minBin {
					p.words = append(p.words, vals[i])
				}
			}
			x, err := d.Encode(vals)
			if err != nil {
				continue
			}
			lo, hi := -1, -1
			for j, v := range x {
				if v != 0 {
					if lo < 0 {
						lo = j
					}
					hi = j
				}
			}
			if lo < 0 || hi == lo {
				continue
			}
			f32 := make([]byte, 0, 4*(hi-lo+1))
			f64 := make([]byte, 0, 8*(hi-lo+1))
			for _, v := range x[lo : hi+1] {
				f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(v))
				f64 = binary.LittleEndian.AppendUint64(f64, math.Float64bits(float64(v)))
			}
			p.encoded = append(p.encoded, f32, f64)
		}
	}
	return p
}

// find returns what of a row frame f carries, or "".
func (p rowPatterns) find(f frame) string {
	for _, w := range p.words {
		if (f.Opcode != 1 || len(w) >= minText) && bytes.Contains(f.Data, []byte(w)) {
			return fmt.Sprintf("the typed text %q", w)
		}
	}
	for _, e := range p.encoded {
		if bytes.Contains(f.Data, e) {
			return "a row's encoded features"
		}
	}
	return ""
}

// TestRowPatternsFind shows the row check can fail: a frame carrying a
// word, or a row's encoded features, is found; an update-like frame of
// random floats is not.
func TestRowPatternsFind(t *testing.T) {
	b, err := task.LookupBuiltin("text")
	if err != nil {
		t.Fatal(err)
	}
	rows := task.Rows{Values: [][]string{{"schmetterling"}, {"maison"}}, Labels: []int{1, 2}}
	p := newRowPatterns(b.Def, []task.Rows{rows})
	x, _ := b.Def.Encode([]string{"maison"})
	var enc []byte
	for _, v := range x {
		enc = binary.LittleEndian.AppendUint32(enc, math.Float32bits(v))
	}
	noise := make([]byte, 8192)
	for i := range noise {
		noise[i] = byte(i*131 + i/7)
	}
	for _, tc := range []struct {
		name string
		f    frame
		want bool
	}{
		{"a word in a binary frame", frame{2, append(append([]byte{1, 2}, "schmetterling"...), 3)}, true},
		{"a long word in a text frame", frame{1, []byte(`{"nickname":"schmetterling"}`)}, true},
		{"a short word in a text frame", frame{1, []byte(`{"x":"maison"}`)}, false},
		{"the encoded row", frame{2, append(append([]byte{9}, enc...), 9)}, true},
		{"noise", frame{2, noise}, false},
	} {
		if got := p.find(tc.f) != ""; got != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTaskPages: three pages in a real coordinator's session of the
// built-in text task (coordinator -task text): before consent each shows
// the task in words; one page (a phone screen) types its words in the
// generated form, where a word too long and a row without an answer are
// refused in words and never stored; one picks a CSV file whose bad lines
// are listed by line number; one uses the example rows. The session
// trains to its last round, "try the model" answers a typed word with a
// language, and no outgoing frame of any page carries a typed word or a
// row's features.
func TestTaskPages(t *testing.T) {
	const (
		code   = "TEXT3"
		pages  = 3
		rounds = 5
		batch  = 4
	)
	webDir := pageBuild(t)
	coord := rowTaskCoordinator(t, "text", code, pages, "-T", fmt.Sprint(rounds), "-b", fmt.Sprint(batch))
	srv := serve(t, pageHandler(webDir, proxyTo(coord.addr)))
	url := srv.URL + "/?code=" + code
	shots := screenshotDir(t)
	b, _ := task.LookupBuiltin("text")
	def := b.Def
	train, _, err := b.LoadRows("")
	if err != nil {
		t.Fatal(err)
	}
	need := rounds * batch

	typer, err := phone(t)
	if err != nil {
		t.Fatal(err)
	}
	picker, demo := launch(t, t.TempDir()), launch(t, t.TempDir())
	browsers := []*browser{typer, picker, demo}
	defer func() {
		for _, b := range browsers {
			b.close()
		}
	}()
	count := func(b *browser) int {
		var n int
		b.eval(`Number((document.getElementById("data-count")||{}).textContent)`, &n)
		return n
	}
	noWider := func(b *browser, screen string) {
		t.Helper()
		var w struct{ Scroll, Inner float64 }
		if err := b.eval(`({scroll: document.documentElement.scrollWidth, inner: innerWidth})`, &w); err != nil {
			t.Fatal(err)
		}
		if w.Scroll > w.Inner {
			t.Errorf("the %s screen is %.0f px wide on a %.0f px phone", screen, w.Scroll, w.Inner)
		}
	}
	for i, b := range browsers {
		b.must(60*time.Second, "consent", chromedp.Navigate(url), chromedp.WaitVisible("#task-words", chromedp.ByID))
		var words string
		b.must(5*time.Second, "task words", chromedp.Text("#task-words", &words, chromedp.ByID))
		if words != def.Describe() {
			t.Errorf("page %d shows the task as %q, want %q", i, words, def.Describe())
		}
		if i == 0 {
			noWider(b, "consent")
			if err := b.viewShot(filepath.Join(shots, "task-consent.png")); err != nil {
				t.Fatal(err)
			}
		}
		b.must(30*time.Second, "join", chromedp.Click("#join-btn", chromedp.ByID), chromedp.WaitVisible("#row-0", chromedp.ByID))
	}

	// The typing page: a word too long and a row without an answer are
	// refused in words; then need words, typed with their languages.
	set := func(id, v, ev string) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event(%q, {bubbles: true})); })()`, id, v, ev), nil)
	}
	msg := func() string {
		var s string
		typer.eval(`(document.getElementById("row-msg")||{}).textContent || ""`, &s)
		return s
	}
	typer.must(10*time.Second, "a word too long",
		set("row-0", strings.Repeat("a", 41), "input"), set("row-label", "German", "change"), chromedp.Click("#row-add", chromedp.ByID))
	if m := msg(); !strings.Contains(m, "41 characters is too long; at most 40") {
		t.Errorf("a word too long: the page says %q", m)
	}
	typer.must(10*time.Second, "no answer", set("row-0", "haus", "input"), set("row-label", "", "change"), chromedp.Click("#row-add", chromedp.ByID))
	if m := msg(); !strings.Contains(m, "Choose the answer") {
		t.Errorf("a row without an answer: the page says %q", m)
	}
	if n := count(typer); n != 0 {
		t.Errorf("%d rows stored after two refused rows", n)
	}
	for k := 0; k < need; k++ {
		typer.must(10*time.Second, "type a word",
			set("row-0", train.Values[k][0], "input"), set("row-label", def.Label.Values[train.Labels[k]], "change"),
			chromedp.Click("#row-add", chromedp.ByID),
			chromedp.Poll(fmt.Sprintf(`Number((document.getElementById("data-count")||{}).textContent) == %d`, k+1), nil, chromedp.WithPollingTimeout(8*time.Second)))
		if k == 0 {
			var left string
			typer.eval(`document.getElementById("row-0").value + document.getElementById("row-label").value`, &left)
			if left != "" {
				t.Errorf("after Add the form still holds %q, want it empty for the next row", left)
			}
		}
	}
	noWider(typer, "data")
	if err := typer.viewShot(filepath.Join(shots, "task-rows.png")); err != nil {
		t.Fatal(err)
	}

	// The picking page: a CSV file of need+10 good rows and two bad
	// lines (3: an unknown language, 6: two words' worth of columns).
	var csv bytes.Buffer
	good := task.Rows{Values: train.Values[100 : 110+need], Labels: train.Labels[100 : 110+need]}
	if err := def.WriteCSV(&csv, good); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(csv.String(), "\n")
	lines = slices.Insert(lines, 2, "ciao,Klingon")
	lines = slices.Insert(lines, 5, "un,deux,French")
	path := filepath.Join(t.TempDir(), "words.csv")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	picker.must(30*time.Second, "pick a CSV file",
		chromedp.SetUploadFiles("#files", []string{path}, chromedp.ByID),
		chromedp.Poll(fmt.Sprintf(`Number((document.getElementById("data-count")||{}).textContent) == %d`, good.Len()), nil, chromedp.WithPollingTimeout(20*time.Second)))
	var refused string
	picker.must(5*time.Second, "refused lines", chromedp.Text("#refused", &refused, chromedp.ByID))
	for _, want := range []string{"words.csv, line 3: language: \"Klingon\" is not one of the choices", "words.csv, line 6: 3 values, the first line names 2 columns"} {
		if !strings.Contains(refused, want) {
			t.Errorf("refused lines %q, want %q", refused, want)
		}
	}

	// The example rows.
	demo.must(30*time.Second, "example rows", chromedp.Click("#demo-btn", chromedp.ByID),
		chromedp.Poll(`Number((document.getElementById("data-count")||{}).textContent) > 0`, nil, chromedp.WithPollingTimeout(20*time.Second)))

	for _, b := range browsers {
		b.must(20*time.Second, "start helping", chromedp.Click("#train-btn", chromedp.ByID), chromedp.WaitVisible("#train", chromedp.ByID))
	}
	waitCommitted(t, srv.URL, code, rounds, 4*time.Minute, func() string {
		var why []string
		for i, b := range browsers {
			var st string
			b.eval(`(document.getElementById("conn")||{}).textContent + ": " + (document.getElementById("status")||{}).textContent + " " + ((document.getElementById("error")||{}).textContent||"")`, &st)
			why = append(why, fmt.Sprintf("page %d: %s", i, st))
		}
		return strings.Join(why, "\n") + "\ncoordinator log " + coord.log.Name()
	})

	// The projector does not draw the text model's weights as pictures
	// (1,024 hashed word fragments would pass for a 32x32 picture).
	demo.must(60*time.Second, "the projector's model note",
		chromedp.Navigate(srv.URL+"/dashboard?code="+code),
		chromedp.Poll(`(() => { const n = document.getElementById("sum-pics-note"), box = document.getElementById("sum-tiles");
  return n && n.textContent.includes("not drawn as pictures") && box && box.children.length === 0; })()`,
			nil, chromedp.WithPollingTimeout(45*time.Second)))

	// Try the model: a word the page never stored.
	var answer string
	// The button is pressed by the script, not at its place on the
	// screen: the session's end can move the page's layout between
	// finding the button and a pointer's press on a busy machine.
	typer.must(90*time.Second, "try the model",
		set("try-0", "schmetterling", "input"), chromedp.Evaluate(`document.getElementById("try-btn").click()`, nil),
		chromedp.Poll(`(document.getElementById("prediction")||{}).textContent.startsWith("The model says: ")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Text("#prediction", &answer, chromedp.ByID))
	if lang := strings.TrimPrefix(answer, "The model says: "); !slices.Contains(def.Label.Values, lang) {
		t.Errorf("try the model answered %q, want one of %v", answer, def.Label.Values)
	}
	noWider(typer, "training")
	if err := typer.screenshot(filepath.Join(shots, "task-train.png")); err != nil {
		t.Fatal(err)
	}
	t.Logf("try the model: schmetterling -> %q", answer)

	// No outgoing frame carries a row.
	for i, b := range browsers {
		var sets []task.Rows
		for _, src := range []string{"demo", "files", "typed"} {
			sets = append(sets, pageRows(t, b, code, src, def))
		}
		n := 0
		for _, s := range sets {
			n += s.Len()
		}
		if n == 0 {
			t.Errorf("page %d stored no rows", i)
		}
		p := newRowPatterns(def, sets)
		frames := b.sent()
		bin := 0
		for k, f := range frames {
			if f.Opcode != 1 {
				bin++
			}
			if what := p.find(f); what != "" {
				t.Errorf("page %d: outgoing frame %d (opcode %d, %d bytes) carries %s", i, k, f.Opcode, len(f.Data), what)
			}
		}
		if bin == 0 {
			t.Errorf("page %d sent no update frames: the capture saw nothing", i)
		}
		t.Logf("page %d: %d rows stored (%d words checked), %d outgoing frames, none with a row", i, n, len(p.words), len(frames))
	}
}
