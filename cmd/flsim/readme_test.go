package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"browserfl/internal/doccmd"
)

// TestReadmeCommands: every flsim command README.md gives passes flsim's
// own flag parsing and every check it makes before the data loads, as
// written ("-h" asks for the usage). A planted command those checks
// refuse shows the test would fail.
func TestReadmeCommands(t *testing.T) {
	if _, err := parseFlags([]string{"-algorithm", "nc", "-rho", "8", "-compressor", "ef+qinf:3bits"}, io.Discard); err == nil {
		t.Fatal("the planted command (-compressor ef+qinf:3bits) is accepted")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := doccmd.Commands(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	runs := doccmd.Of(cmds, "flsim")
	for _, c := range runs {
		if _, err := parseFlags(c.Args, io.Discard); err != nil && !(errors.Is(err, flag.ErrHelp) && strings.Join(c.Args, " ") == "-h") {
			t.Errorf("README.md: %s\n  refused: %v", c.Text, err)
		}
	}
	if len(runs) < 8 {
		t.Errorf("%d flsim commands found in README.md, want its 8 or more", len(runs))
	}
}
