package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRunPrintsOneRowPerCell runs the command on two tiny cells and checks
// the table it prints: one row per cell, with the claim the product
// states for that session.
func TestRunPrintsOneRowPerCell(t *testing.T) {
	var out, progress bytes.Buffer
	err := run(context.Background(), []string{"-alg", "nc,noisysgd,local", "-epsilon", "4", "-T", "2", "-dim", "1", "-trials", "400", "-select", "100"}, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "| nc |") || strings.HasPrefix(l, "| noisysgd |") || strings.HasPrefix(l, "| local ") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("want 3 rows, got %d:\n%s", len(rows), out.String())
	}
	// The claims of these sessions at delta 1e-5 (plan.SessionFigures):
	// all spend the whole budget (nc's noise uses H_K for its release
	// cap, docs/privacy.md section 2a).
	for i, want := range []string{"| nc | 4 | 4.00 |", "| noisysgd | 4 | 4.00 |", "| local (K = 1, linear) | 4 | 4.00 |"} {
		if !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d = %q, want prefix %q", i, rows[i], want)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-epsilon", "x"},
		{"-alg", "cdpsgd", "-trials", "10", "-select", "10"},
		{"extra"},
		{"-alg", "local", "-b", "2", "-K", "3", "-trials", "10", "-select", "10"},
		{"-nope"},
		{"-noise-factor", "0"},
		{"-owner-delta", "0"},
		// A bad cell after good ones, and rounds past the bound: refused
		// before anything runs or prints.
		{"-alg", "nc,bogus", "-epsilon", "4"},
		{"-alg", "nc,", "-epsilon", "4"},
		{"-alg", "noisysgd", "-T", "1000001"},
	} {
		var out, progress bytes.Buffer
		if err := run(context.Background(), args, &out, &progress); err == nil {
			t.Errorf("%q accepted", args)
		}
		if out.Len() > 0 {
			t.Errorf("%q: printed before it was refused:\n%s", args, out.String())
		}
	}
}
