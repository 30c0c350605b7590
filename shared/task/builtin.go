package task

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"browserfl/shared/dataset"
	"browserfl/shared/dataset/rdata"
)

// The setting the built-in tasks' Eta and Clip were chosen at: a live
// lesson of TunedDevices devices, each in every round, TunedRounds
// rounds of TunedBatch rows.
const (
	TunedDevices = 10
	TunedRounds  = 200
	TunedBatch   = 32
)

// Builtin is a task the product ships: its definition and the loader of
// its real public data set.
type Builtin struct {
	Def *Definition
	// DefaultDir is where `make setup` puts the data.
	DefaultDir string
	// Source names the data's origin and licence.
	Source string
	// Eta and Clip are the step size and the clipping bound a session
	// of this task takes unless it is given its own: chosen on the task's
	// validation split at the lesson's setting (nc, TunedDevices devices
	// all in every round, TunedRounds rounds of TunedBatch rows, epsilon
	// 7.92 at delta 1e-5; docs/tasks.md, "Step size and clipping").
	Eta, Clip float64
	// load returns every row and how many to hold out for the test set.
	load func(d *Definition, dir string) (rows Rows, nTest int, err error)
}

// LoadRows reads the task's rows from dir (DefaultDir if empty), split
// into training and test rows. Missing files wrap os.ErrNotExist and say
// how to get them.
func (b Builtin) LoadRows(dir string) (train, test Rows, err error) {
	if dir == "" {
		dir = b.DefaultDir
	}
	all, nTest, err := b.load(b.Def, dir)
	if err == nil {
		train, test, err = split(all, nTest)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w (run `make setup` from the repository root; it fetches the data of the %s task)", err, b.Def.Name)
		}
		return Rows{}, Rows{}, fmt.Errorf("task %s: %w", b.Def.Name, err)
	}
	return train, test, nil
}

// Load reads the task's training and test sets, encoded.
func (b Builtin) Load(dir string) (train, test dataset.Set, err error) {
	tr, te, err := b.LoadRows(dir)
	if err != nil {
		return train, test, err
	}
	if train, err = b.Def.Set(b.Def.Name+"-train", tr); err != nil {
		return train, test, err
	}
	test, err = b.Def.Set(b.Def.Name+"-test", te)
	return train, test, err
}

func f64(x float64) *float64 { return &x }

// DefaultDiamondsDir is where scripts/tasks.sh puts the lazy-load
// database of Debian's r-cran-ggplot2 (relative to the repository root).
const DefaultDiamondsDir = "data/diamonds"

// DefaultWordsDir holds the word lists of Debian's wamerican, wngerman,
// wfrench, wspanish and witalian.
const DefaultWordsDir = "/usr/share/dict"

// diamondBands are the upper price limits (US dollars) of the label's
// first three values.
var diamondBands = [...]float64{1000, 2500, 5000}

var builtins = map[string]Builtin{
	"tabular": {
		Def: &Definition{
			Format: Format, Name: "tabular", Title: "Guess a diamond's price",
			About: "The class teaches a model to guess how much a diamond costs from its weight, cut, colour and clarity.",
			Features: []Feature{
				{Name: "carat", Ask: "How heavy is it, in carats?", Kind: Number, Min: f64(0.2), Max: f64(3)},
				{Name: "cut", Ask: "How well is it cut?", Kind: Category, Values: []string{"Fair", "Good", "Very Good", "Premium", "Ideal"}},
				{Name: "color", Ask: "What colour grade is it (D is the best)?", Kind: Category, Values: []string{"D", "E", "F", "G", "H", "I", "J"}},
				{Name: "clarity", Ask: "How clear is it (IF is the best)?", Kind: Category, Values: []string{"I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"}},
				{Name: "depth", Ask: "Its depth, in percent of its width?", Kind: Number, Min: f64(43), Max: f64(79)},
				{Name: "table", Ask: "Its top's width, in percent of its width?", Kind: Number, Min: f64(43), Max: f64(95)},
			},
			Label: Label{Name: "price", Ask: "What does it cost?",
				Values: []string{"under $1000", "$1000 to $2500", "$2500 to $5000", "over $5000"}},
			Model: "logreg",
		},
		DefaultDir: DefaultDiamondsDir,
		Source:     "the diamonds table of R's ggplot2 (53,940 diamonds; Debian package r-cran-ggplot2, GPL-2)",
		Eta:        0.7, Clip: 1.5,
		load: loadDiamonds,
	},
	"text": {
		Def: &Definition{
			Format: Format, Name: "text", Title: "Guess a word's language",
			About: "The class teaches a model to tell which language a word is from: English, German, French, Spanish or Italian.",
			Features: []Feature{
				{Name: "word", Ask: "Type a word", Kind: Text, MaxLength: 40, CharGrams: []int{1, 2, 3}, Buckets: 1024},
			},
			Label: Label{Name: "language", Ask: "Which language is it?",
				Values: []string{"English", "German", "French", "Spanish", "Italian"}},
			Model: "logreg",
		},
		DefaultDir: DefaultWordsDir,
		Source:     "Debian's word lists wamerican, wngerman, wfrench, wspanish and witalian (/usr/share/dict; free licences, see each package's copyright file)",
		Eta:        2, Clip: 0.25,
		load: loadWords,
	},
}

// BuiltinNames returns the built-in tasks' names, sorted.
func BuiltinNames() []string {
	var out []string
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupBuiltin returns the built-in task of that name.
func LookupBuiltin(name string) (Builtin, error) {
	b, ok := builtins[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Builtin{}, fmt.Errorf("task: unknown built-in task %q (want one of %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return b, nil
}

// splitSeed fixes the built-in tasks' train/test split (the same on every
// platform: math/rand/v2's PCG).
const splitSeed = 0x7461736b73706c // "tasksplt"

// split orders rows by a seeded permutation and holds out the first
// nTest as the test rows.
func split(all Rows, nTest int) (train, test Rows, err error) {
	n := all.Len()
	if nTest <= 0 || nTest >= n {
		return train, test, fmt.Errorf("%d rows, cannot hold out %d", n, nTest)
	}
	perm := rand.New(rand.NewPCG(splitSeed, uint64(n))).Perm(n)
	pick := func(idx []int) Rows {
		r := Rows{Values: make([][]string, len(idx)), Labels: make([]int, len(idx))}
		for i, j := range idx {
			r.Values[i], r.Labels[i] = all.Values[j], all.Labels[j]
		}
		return r
	}
	return pick(perm[nTest:]), pick(perm[:nTest]), nil
}

// loadDiamonds reads ggplot2's diamonds table as rows of the task (the
// strings a student would type); diamonds outside the task's public
// bounds (32 heavier than 3 carats among them) are left out, and 10,000
// are held out for the test set.
func loadDiamonds(d *Definition, dir string) (rows Rows, nTest int, err error) {
	obj, err := rdata.LazyLoad(dir, "Rdata", "diamonds")
	if err != nil {
		return rows, 0, err
	}
	fr, err := rdata.DataFrame(obj)
	if err != nil {
		return rows, 0, err
	}
	cols := make([]rdata.Column, 0, len(d.Features)+1)
	for i, name := range []string{"carat", "cut", "color", "clarity", "depth", "table", "price"} {
		c, ok := fr.Column(name)
		if !ok {
			return rows, 0, fmt.Errorf("diamonds has no column %q", name)
		}
		// Each column must be of the kind the task reads (a replaced
		// database with a text or factor price must not panic).
		wantFactor := i < len(d.Features) && d.Features[i].Kind == Category
		if c.Factor() != wantFactor || (!wantFactor && len(c.Reals) != fr.Rows) {
			return rows, 0, fmt.Errorf("diamonds column %q is not the kind the task reads (factor %v, want %v)", name, c.Factor(), wantFactor)
		}
		cols = append(cols, c)
	}
	for r := 0; r < fr.Rows; r++ {
		row := make([]string, len(d.Features))
		for i, c := range cols[:len(d.Features)] {
			if c.Factor() {
				if c.Codes[r] < 0 {
					row[i] = ""
				} else {
					row[i] = c.Levels[c.Codes[r]]
				}
			} else {
				row[i] = num(c.Reals[r])
			}
		}
		if _, err := d.Encode(row); err != nil {
			continue // outside the public bounds
		}
		price := cols[len(cols)-1].Reals[r]
		label := len(diamondBands)
		for b, hi := range diamondBands {
			if price < hi {
				label = b
				break
			}
		}
		rows.Values = append(rows.Values, row)
		rows.Labels = append(rows.Labels, label)
	}
	if rows.Len() < fr.Rows*99/100 {
		return rows, 0, fmt.Errorf("only %d of %d diamonds fit the task's bounds", rows.Len(), fr.Rows)
	}
	return rows, 10000, nil
}

// wordFiles are the word lists of the text task's languages, in label
// order.
var wordFiles = []string{"american-english", "ngerman", "french", "spanish", "italian"}

// WordsPerLanguage is how many words of each language the text task
// uses (the lists hold 86,016 to 356,010).
const WordsPerLanguage = 12000

// loadWords reads the five word lists, keeps the words of 3 to 20
// lower-case letters that appear in exactly one list, and takes
// WordsPerLanguage of each by a seeded draw; 2,000 of each are the test
// set.
func loadWords(d *Definition, dir string) (rows Rows, nTest int, err error) {
	lists := make([][]string, len(wordFiles))
	count := map[string]int{}
	for i, f := range wordFiles {
		if lists[i], err = readWords(filepath.Join(dir, f)); err != nil {
			return rows, 0, err
		}
		for _, w := range lists[i] {
			count[w]++
		}
	}
	for label, ws := range lists {
		var own []string
		for _, w := range ws {
			if count[w] == 1 {
				own = append(own, w)
			}
		}
		if len(own) < WordsPerLanguage {
			return rows, 0, fmt.Errorf("%s: %d usable words, want %d", wordFiles[label], len(own), WordsPerLanguage)
		}
		rng := rand.New(rand.NewPCG(splitSeed, uint64(label)))
		rng.Shuffle(len(own), func(i, j int) { own[i], own[j] = own[j], own[i] })
		for _, w := range own[:WordsPerLanguage] {
			if _, err := d.Encode([]string{w}); err != nil {
				return rows, 0, fmt.Errorf("%s: word %q: %w", wordFiles[label], w, err)
			}
			rows.Values = append(rows.Values, []string{w})
			rows.Labels = append(rows.Labels, label)
		}
	}
	return rows, 2000 * len(wordFiles), nil
}

// readWords returns the distinct words of a list that are 3 to 20
// lower-case letters (no capitals, so no names; no apostrophes).
func readWords(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.TrimSpace(sc.Text())
		n := utf8.RuneCountInString(w)
		if n < 3 || n > 20 || !utf8.ValidString(w) || seen[w] {
			continue
		}
		if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLower(r) }) >= 0 {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
