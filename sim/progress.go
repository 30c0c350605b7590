package sim

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress draws a one-line progress bar with a rate and an ETA on w
// (normally stderr). It redraws at most every Interval so that long runs do
// not flood a terminal or a log file. A nil *Progress does nothing.
type Progress struct {
	w        io.Writer
	label    string
	total    int
	start    time.Time
	last     time.Time
	Interval time.Duration
	now      func() time.Time
	tty      bool
	lastDone int
}

// NewProgress returns a progress bar for total steps labelled label.
func NewProgress(w io.Writer, label string, total int) *Progress {
	now := time.Now
	t := now()
	pr := &Progress{w: w, label: label, total: total, start: t, Interval: 200 * time.Millisecond, now: now, tty: isTerminal(w)}
	if !pr.tty {
		// A log file or a pipe gets a line every 10% (or every 10 s), not a
		// redraw five times a second.
		pr.Interval = 10 * time.Second
	}
	return pr
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update redraws the bar for done steps out of total, with an extra note
// (e.g. the latest accuracy). The final step is always drawn.
func (p *Progress) Update(done int, note string) {
	if p == nil || p.w == nil {
		return
	}
	t := p.now()
	decile := p.total > 0 && !p.tty && done*10/p.total != p.lastDone*10/p.total
	if done < p.total && t.Sub(p.last) < p.Interval && !decile {
		return
	}
	if done == p.lastDone && done >= p.total {
		return // the final line is drawn once
	}
	p.last, p.lastDone = t, done
	if p.tty {
		fmt.Fprint(p.w, "\r"+p.line(done, note, t))
	} else {
		fmt.Fprintln(p.w, p.line(done, note, t))
	}
}

// Done ends the bar's line.
func (p *Progress) Done() {
	if p == nil || p.w == nil || !p.tty {
		return
	}
	fmt.Fprintln(p.w)
}

func (p *Progress) line(done int, note string, t time.Time) string {
	const width = 30
	frac := 0.0
	if p.total > 0 {
		frac = float64(done) / float64(p.total)
	}
	if frac > 1 {
		frac = 1
	}
	filled := int(frac * width)
	bar := strings.Repeat("#", filled) + strings.Repeat(".", width-filled)
	elapsed := t.Sub(p.start)
	eta := "?"
	if done > 0 && done < p.total {
		rem := time.Duration(float64(elapsed) / float64(done) * float64(p.total-done))
		eta = rem.Round(time.Second).String()
	} else if done >= p.total {
		eta = "0s"
	}
	s := fmt.Sprintf("%s [%s] %d/%d %3.0f%% %s elapsed, eta %s", p.label, bar, done, p.total, 100*frac, elapsed.Round(100*time.Millisecond), eta)
	if note != "" {
		s += "  " + note
	}
	return s
}
