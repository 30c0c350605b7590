// Package doccmd finds the commands a Markdown document gives, so that a
// command's own tests can run each one's flags through the command's
// parsing and checks, as written: the lines of fenced code blocks
// (continued with a trailing backslash) and inline code spans, split as
// a POSIX shell splits words (double and single quotes), with a trailing
// "# comment" dropped.
package doccmd

import (
	"errors"
	"regexp"
	"strings"
)

// Command is one command a document gives: its program ("flsim" for
// "go run ./cmd/flsim", "bin/flsim" or "./bin/flsim"; "make") and its
// arguments, and the text it was read from.
type Command struct {
	Prog string
	Args []string
	Text string
}

var (
	fence  = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	inline = regexp.MustCompile("`([^`]+)`")
	// command is how a command starts.
	command = regexp.MustCompile(`^\s*(go run \./cmd/|\./bin/|bin/|make )`)
)

// Commands returns every command md gives, in order: the lines of its
// fenced code blocks, then its inline code spans. Spans that are not a
// command ("plan.SessionFigures") are left out: a command starts with
// "go run ./cmd/", "bin/", "./bin/" or "make ".
func Commands(md string) ([]Command, error) {
	var texts []string
	for _, m := range fence.FindAllStringSubmatch(md, -1) {
		body := strings.ReplaceAll(m[1], "\\\n", " ")
		texts = append(texts, strings.Split(body, "\n")...)
	}
	rest := fence.ReplaceAllString(md, "")
	for _, m := range inline.FindAllStringSubmatch(rest, -1) {
		// "\|" is a pipe escaped in a table cell.
		texts = append(texts, strings.ReplaceAll(strings.ReplaceAll(m[1], "\n", " "), `\|`, "|"))
	}
	var out []Command
	for _, text := range texts {
		if !command.MatchString(text) {
			continue
		}
		words, err := Split(text)
		if err != nil {
			return nil, err
		}
		var c Command
		switch {
		case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.HasPrefix(words[2], "./cmd/"):
			c = Command{Prog: strings.TrimSuffix(strings.TrimPrefix(words[2], "./cmd/"), "/"), Args: words[3:]}
		case len(words) >= 1 && (strings.HasPrefix(words[0], "bin/") || strings.HasPrefix(words[0], "./bin/")):
			c = Command{Prog: words[0][strings.Index(words[0], "bin/")+4:], Args: words[1:]}
		case len(words) >= 2 && words[0] == "make":
			c = Command{Prog: "make", Args: words[1:]}
		default:
			continue
		}
		c.Text = strings.TrimSpace(text)
		out = append(out, c)
	}
	return out, nil
}

// Of returns the commands of cmds whose program is prog.
func Of(cmds []Command, prog string) []Command {
	var out []Command
	for _, c := range cmds {
		if c.Prog == prog {
			out = append(out, c)
		}
	}
	return out
}

// Split splits a command line into words as a shell does for the
// commands docs give: blanks separate words, double and single quotes
// group (and are removed), a word starting with # begins a comment, and
// the command ends at an unquoted ;, | or & (what follows is another
// command).
func Split(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord, r == ';' || r == '|' || r == '&':
			if inWord {
				words = append(words, w.String())
			}
			return words, nil
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("doccmd: unclosed quote in " + line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// Vars splits make's arguments into its targets and its VAR=value
// assignments (make's own flags, "-n", are left out).
func Vars(args []string) (targets []string, vars map[string]string) {
	vars = map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && k != "" && !strings.HasPrefix(a, "-") {
			vars[k] = v
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue // make's own flag (-n, -j 2 is not used in the docs)
		}
		targets = append(targets, a)
	}
	return targets, vars
}
