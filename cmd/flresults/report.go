package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"

	"browserfl/sim"
)

// results are the runs on disk, by id, recording which runs the section
// being written looks up.
type results struct {
	m      map[string]outcome
	looked map[string]bool
}

func (r *results) get(id string) (outcome, bool) {
	if r.looked != nil {
		r.looked[id] = true
	}
	oc, ok := r.m[id]
	return oc, ok
}

// section is one part of the report between its markers (sectionBegin,
// sectionEnd). A section is written anew only when every run it looks up
// is on disk (hits == reads; a section that looks up none, such as the
// header, always is); otherwise the report on disk's text of it is kept,
// whole, so that rerunning one group (-only) on a clone without the
// others' cache never replaces a finished section by a partial one. A
// section the report on disk lacks is written as it is, its missing
// cells saying so.
type section struct {
	name        string
	text        string
	reads, hits int
}

func (s section) complete() bool { return s.hits == s.reads }

const (
	sectionBegin = "<!-- flresults section %s -->\n"
	sectionEnd   = "<!-- flresults end %s -->\n"
)

var (
	sectionRE = regexp.MustCompile(`(?s)<!-- flresults section ([a-z0-9-]+) -->\n(.*?)<!-- flresults end ([a-z0-9-]+) -->\n`)
	markerRE  = regexp.MustCompile(`<!-- flresults `)
)

// parseSections returns the sections of a report written by assemble, by
// name; a report without any marker (written before the sections) has
// none. It is an error if a section's end marker names another section, a
// name repeats, a marker is left unpaired or text lies outside the
// sections: the report was edited by hand, and keeping parts of it would
// lose the rest.
func parseSections(report string) (map[string]string, error) {
	out := map[string]string{}
	if !markerRE.MatchString(report) {
		return out, nil
	}
	matches := sectionRE.FindAllStringSubmatchIndex(report, -1)
	at := 0
	for _, m := range matches {
		if m[0] != at {
			return nil, fmt.Errorf("report: text or an unpaired marker outside the sections at byte %d: %.40q", at, report[at:m[0]])
		}
		at = m[1]
		name, body, end := report[m[2]:m[3]], report[m[4]:m[5]], report[m[6]:m[7]]
		if name != end {
			return nil, fmt.Errorf("report: section %q ends with the marker of %q", name, end)
		}
		if markerRE.MatchString(body) {
			return nil, fmt.Errorf("report: section %q holds another marker", name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("report: section %q appears twice", name)
		}
		out[name] = body
	}
	if at != len(report) {
		return nil, fmt.Errorf("report: text or an unpaired marker after the last section: %.40q", report[at:])
	}
	return out, nil
}

// assemble joins the sections with their markers, each kept from old (the
// sections of the report on disk) when it is not complete; it returns the
// names of the sections kept, with their counts, for the log.
func assemble(secs []section, old map[string]string) (string, []string) {
	var b strings.Builder
	var kept []string
	for _, s := range secs {
		text := s.text
		if prev, ok := old[s.name]; ok && !s.complete() {
			text = prev
			kept = append(kept, fmt.Sprintf("%s (%d of its %d runs on disk)", s.name, s.hits, s.reads))
		}
		fmt.Fprintf(&b, sectionBegin, s.name)
		b.WriteString(text)
		fmt.Fprintf(&b, sectionEnd, s.name)
	}
	return b.String(), kept
}

// sectionWriter collects the report's sections, counting the distinct
// runs each one looks up in res and how many of them are on disk.
type sectionWriter struct {
	res  *results
	secs []section
}

// add writes one section with f; also are lookups made elsewhere that
// the section depends on (the sweeps whose choices it shows).
func (sw *sectionWriter) add(name string, f func(b *strings.Builder), also ...sweepTable) {
	sw.res.looked = map[string]bool{}
	var b strings.Builder
	f(&b)
	s := section{name: name, text: b.String(), reads: len(sw.res.looked)}
	for id := range sw.res.looked {
		if _, ok := sw.res.m[id]; ok {
			s.hits++
		}
	}
	sw.res.looked = nil
	for _, t := range also {
		s.reads += t.reads
		s.hits += t.hits
	}
	sw.secs = append(sw.secs, s)
}

// reportSections writes docs/results.md's sections from the runs on disk.
// Cells whose run has not been done yet say so.
func reportSections(groups []group, m map[string]outcome, pu puReport) []section {
	res := &results{m: m}
	sw := &sectionWriter{res: res}
	sw.add("header", func(b *strings.Builder) { b.WriteString(reportHeader) })
	byName := map[string]group{}
	for _, g := range groups {
		byName[g.name] = g
	}
	cell := func(id string, f func(outcome) string) string {
		oc, ok := res.get(id)
		if !ok {
			return "not run"
		}
		return f(oc)
	}
	acc := func(oc outcome) string { return pct(oc.acc) }
	for _, c := range []constants{paperConsts, ourConsts} {
		sw.add("nc-tables-"+c.name, func(b *strings.Builder) {
			fmt.Fprintf(b, "\n## Noise-cancellation paper, Tables 1 and 2 — %s\n\n%s\n\n", constTitle(c), constNote(c))
			b.WriteString("Table 1 (M = 100, m = 50, T = 1,200, b = 1: one pass over 60,000 samples).\n\n")
			b.WriteString("| rho_p | ours: NC (Alg. 1) | paper: Our Work | ours: noisy SGD | paper: Noisy SGD | ours: worst device epsilon at 1e-5 (NC) |\n|---|---|---|---|---|---|\n")
			for _, rho := range []float64{4, 8, 12} {
				nc, ns := ncRun(c, "nc", rho, 50), ncRun(c, "noisysgd", rho, 50)
				fmt.Fprintf(b, "| %g | %s | %s | %s | %s | %s |\n", rho, cell(nc.id, acc), paperNCTable1[rho][0],
					cell(ns.id, acc), paperNCTable1[rho][1], cell(nc.id, epsCell))
			}
			b.WriteString("\nTable 2 (rho_p = 8, M = 100, T = 60,000 / m).\n\n")
			b.WriteString("| m | ours: NC | paper: Our Work | ours: noisy SGD | paper: Noisy SGD |\n|---|---|---|---|---|\n")
			for _, m := range []int{20, 50, 80} {
				nc, ns := ncRun(c, "nc", 8, m), ncRun(c, "noisysgd", 8, m)
				fmt.Fprintf(b, "| %d | %s | %s | %s | %s |\n", m, cell(nc.id, acc), paperNCTable2[m][0], cell(ns.id, acc), paperNCTable2[m][1])
			}
			if _, ok := res.get(ncRun(c, "nc", 4, 50).id); ok {
				fmt.Fprintf(b, "\n![accuracy by round](results/nc-table1-%s-rounds.svg)\n", c.name)
			}
		})
		sw.add("fp-tables-"+c.name, func(b *strings.Builder) {
			fmt.Fprintf(b, "\n## Full-participation paper, Tables 1 and 2 — %s\n\n", constTitle(c))
			b.WriteString("M devices, all participating every round (m = M), T = 60,000 / M, b = 1. Each cell: test loss / accuracy, ours then the paper's.\n\n")
			for _, trusted := range []bool{false, true} {
				name := "Table 1, untrusted server (NC with m = M)"
				if trusted {
					name = "Table 2, trusted server"
				}
				fmt.Fprintf(b, "%s:\n\n| rho_p | M = 1 ours | M = 1 paper | M = 10 ours | M = 10 paper | M = 100 ours | M = 100 paper |\n|---|---|---|---|---|---|---|\n", name)
				for _, rho := range []float64{4, 8, 16} {
					fmt.Fprintf(b, "| %g", rho)
					for _, M := range []int{1, 10, 100} {
						e := fpRun(c, trusted, rho, M)
						fmt.Fprintf(b, " | %s | %s / %s", cell(e.id, func(oc outcome) string { return fmt.Sprintf("%.3f / %s", oc.loss, pct(oc.acc)) }), e.paperLoss, e.paper)
					}
					b.WriteString(" |\n")
				}
				b.WriteString("\n")
			}
		})
	}
	sw.add("soteria", func(b *strings.Builder) {
		b.WriteString(soteriaHeader)
		for _, eps := range []float64{1, 4, 16} {
			g := byName[fmt.Sprintf("soteria-eps%g", eps)]
			fmt.Fprintf(b, "\n(epsilon, delta) = (%g, 1e-3) per device:\n\n| algorithm | final accuracy | uplink bytes (all devices) | bytes to reach 50%% | worst device epsilon at 1e-3 (no amplification) |\n|---|---|---|---|---|\n", eps)
			for _, e := range g.runs {
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", e.label, cell(e.id, acc), cell(e.id, func(oc outcome) string { return mb(oc.uplink) }),
					cell(e.id, func(oc outcome) string { return bytesToReach(oc, 0.5) }), cell(e.id, epsCell))
			}
			if _, ok := res.get(g.runs[0].id); ok {
				fmt.Fprintf(b, "\n![accuracy vs uplink bytes](results/%s-bytes.svg)\n", g.plot)
			}
		}
	})
	sw.add("compress", func(b *strings.Builder) {
		b.WriteString(compressHeader)
		dense := compRun("")
		d, denseOK := res.get(dense.id)
		b.WriteString("| compressor | uplink bytes | fewer bytes than dense | final accuracy | vs dense (points) |\n|---|---|---|---|---|\n")
		for _, comp := range compressors {
			e := compRun(comp)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", e.label, cell(e.id, func(oc outcome) string { return mb(oc.uplink) }),
				cell(e.id, func(oc outcome) string {
					if !denseOK || oc.uplink == 0 {
						return "n/a"
					}
					return fmt.Sprintf("%.1fx", float64(d.uplink)/float64(oc.uplink))
				}), cell(e.id, acc), cell(e.id, func(oc outcome) string {
					if !denseOK {
						return "n/a"
					}
					return fmt.Sprintf("%+.1f", 100*(oc.acc-d.acc))
				}))
		}
		if denseOK {
			b.WriteString("\n![accuracy vs uplink bytes](results/compress-bytes.svg)\n")
		}
	})
	writePrivacyUtility(sw, pu)
	sw.add("tasks", func(b *strings.Builder) {
		if pu.tasks != "" {
			b.WriteString(tasksHeader)
			b.WriteString(pu.tasks)
		}
	})
	sw.add("notes", func(b *strings.Builder) { b.WriteString(notesLink) })
	return sw.secs
}

// writeReport writes docs/results.md from the runs on disk, keeping from
// old (the report on disk, "" for none) the sections not all of whose
// runs are on disk; it returns those sections' names and counts.
func writeReport(w io.Writer, groups []group, res map[string]outcome, pu puReport, old string) ([]string, error) {
	prev, err := parseSections(old)
	if err != nil {
		return nil, err
	}
	text, kept := assemble(reportSections(groups, res, pu), prev)
	_, err = io.WriteString(w, text)
	return kept, err
}

// writeReportFile writes the report at path from the runs on disk and
// the row tasks' table (TasksTable), keeping the sections of the report
// there that are not complete (writeReport) and naming them on stderr.
// The file is written whole or not at all: a temporary file renamed over
// it.
func writeReportFile(path string, groups []group, results map[string]outcome, pu puReport, stderr io.Writer) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read report: %w", err)
	}
	tasks, err := os.ReadFile(TasksTable)
	if err != nil {
		return fmt.Errorf("the row tasks' table (bash scripts/tasktable.sh writes it): %w", err)
	}
	pu.tasks = string(tasks)
	var out strings.Builder
	kept, err := writeReport(&out, groups, results, pu, string(old))
	if err != nil {
		return err
	}
	for _, k := range kept {
		fmt.Fprintf(stderr, "flresults: section %s kept as it was in %s: rerun every group it shows to rewrite it\n", k, path)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out.String()), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// TasksTable is the row tasks' table: scripts/tasktable.sh writes it,
// docs/tasks.md and the report show it (TestTaskTableShown keeps them
// equal).
const TasksTable = "docs/results/tasks-table.md"

// tasksHeader introduces the row tasks' table in the report.
const tasksHeader = `
## Tasks beyond pictures

The built-in row tasks (docs/tasks.md): ` + "`tabular`" + ` (a diamond's price band from
ggplot2's diamonds, 4 classes) and ` + "`text`" + ` (a word's language from Debian's word
lists, 5 classes), in the classroom session (M = m = 10, b = 32, one pass, nc at
epsilon 1, 2, 4, 8 per device at delta 1e-5, against the non-private mu2). The step
size of each cell is chosen on the validation split, then the test accuracy is the
mean (min-max) over seeds 1-3 (` + "`bash scripts/tasktable.sh`" + `).

`

// notesLink is appended so readers find the hand-written findings.
const notesLink = "\nFindings and discussion: [results-notes.md](results-notes.md).\n"

func epsCell(oc outcome) string {
	if oc.maxRho == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3g (rho %.3g)", oc.maxEps, oc.maxRho)
}

func bytesToReach(oc outcome, target float64) string {
	for _, r := range oc.recs {
		if !math.IsNaN(r.Accuracy) && r.Accuracy >= target {
			return mb(r.CumUplinkBytes)
		}
	}
	return "never"
}

func constTitle(c constants) string {
	if c.name == "paper" {
		return "with the papers' constants (S = 118.1, D = 0.1)"
	}
	return fmt.Sprintf("with our clipping (S = %g, no projection)", c.clip)
}

func constNote(c constants) string {
	if c.steps.Mu2 == 0 {
		return fmt.Sprintf("Step sizes: the noise-cancellation paper's Theorem 5.2 step size for the mu^2 algorithms (algo.NCTheoremEta; e.g. %.3g for Table 1 at rho_p = 8), %g for noisy SGD (chosen on the validation split, see results-notes.md).",
			ncRun(c, "nc", 8, 50).p.Eta, c.steps.SGD)
	}
	return fmt.Sprintf("Step sizes: eta = %g for the mu^2 algorithms at the reference setting (rho_p = 8, m = 50, T = %d on the 50,000 training images left after the validation split; chosen on the validation split, see results-notes.md) and scaled with rho_p, m, M and T as Theorem 5.2's step size scales (e.g. %.3g at m = 50, T = 1,200, %.3g at m = 20, %.3g at m = 80); %g for noisy SGD.",
		c.steps.Mu2, sim.ReferenceRounds, ncRun(c, "nc", 8, 50).p.Eta, ncRun(c, "nc", 8, 20).p.Eta, ncRun(c, "nc", 8, 80).p.Eta, c.steps.SGD)
}

// pct formats a fraction as a percentage (n/a for NaN).
func pct(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// mb formats bytes in MB.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
