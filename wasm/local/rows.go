package local

import (
	"fmt"
	"math/rand/v2"

	"browserfl/shared/task"
)

// ShuffleRows permutes r's rows in place with a ChaCha8 stream from
// seed, values and labels together (see Shuffle: the page shuffles a
// source once, before storing it).
func ShuffleRows(r task.Rows, seed [32]byte) {
	g := rand.New(rand.NewChaCha8(seed))
	g.Shuffle(r.Len(), func(i, j int) {
		r.Values[i], r.Values[j] = r.Values[j], r.Values[i]
		r.Labels[i], r.Labels[j] = r.Labels[j], r.Labels[i]
	})
}

// JoinRows returns a's rows followed by b's, in a new Rows.
func JoinRows(a, b task.Rows) task.Rows {
	var out task.Rows
	out.Values = append(append(out.Values, a.Values...), b.Values...)
	out.Labels = append(append(out.Labels, a.Labels...), b.Labels...)
	return out
}

// RefusedWords says for each line of file that ReadCSV refused which
// line it is and why, in the task's words ("rows.csv, line 3: carat: 9
// is outside the range; type a number from 0.2 to 3").
func RefusedWords(file string, refused []task.LineError) []string {
	out := make([]string, 0, len(refused))
	for _, e := range refused {
		if e.Line == 0 { // the count of the lines not listed
			out = append(out, fmt.Sprintf("%s: %v", file, e.Err))
			continue
		}
		out = append(out, fmt.Sprintf("%s, line %d: %v", file, e.Line, e.Err))
	}
	return out
}
