package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// writeUsage writes a command's help to w: the usage line (the command's own, followed by
// every flag it does not mention, so that it lists all the command takes) and each flag as a
// person would type it, `--name PLACEHOLDER`, with its text and default.
func writeUsage(w io.Writer, name, usage string, fs *flag.FlagSet) {
	line := usage
	fs.VisitAll(func(f *flag.Flag) {
		if !mentions(usage, f.Name) {
			if p := placeholder(usage, f); p != "" {
				line += fmt.Sprintf(" [--%s %s]", f.Name, p)
			} else {
				line += fmt.Sprintf(" [--%s]", f.Name)
			}
		}
	})
	fmt.Fprintf(w, "Usage: nioc-gpu %s %s\n\nFlags:\n", name, line)
	fs.VisitAll(func(f *flag.Flag) {
		head := "  --" + f.Name
		if p := placeholder(usage, f); p != "" {
			head += " " + p
		}
		_, text := flag.UnquoteUsage(f)
		if d := defaultText(f); d != "" {
			text += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", head, text)
	})
}

// mentions reports whether the usage line names the flag (--name followed by a space, "]",
// "|" or its end).
func mentions(usage, name string) bool {
	return regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `([ \]|=]|$)`).MatchString(usage)
}

// placeholder returns what follows --name on the usage line ("--data FILE.csv": FILE.csv),
// unless that is an example value ("--restarts 50"), else the one word the flag's text quotes in backquotes (`file`: FILE), else a word for its
// type (N, X, DURATION, VALUE); "" for a boolean flag.
func placeholder(usage string, f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	if m := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + ` ([^\s\]\[-][^\s\]]*)`).FindStringSubmatch(usage); m != nil && !example.MatchString(m[1]) {
		return m[1]
	}
	name, _ := flag.UnquoteUsage(f)
	if strings.Contains(f.Usage, "`"+name+"`") && !strings.Contains(name, " ") {
		if word.MatchString(name) {
			return strings.ToUpper(name) // a word stands for the value: FILE
		}
		return name // the values themselves: go|xla
	}
	switch name {
	case "int", "uint":
		return "N"
	case "float":
		return "X"
	case "duration":
		return "DURATION"
	}
	return "VALUE"
}

var word = regexp.MustCompile(`^[a-z]+$`) // ID is already upper case

// example matches a usage line's example value ("50", "60s", "...") rather than a placeholder.
var example = regexp.MustCompile(`^([0-9][0-9.]*[a-z]*|\.\.\.)$`)

// defaultText returns the flag's default as one would type it, "" for a zero default.
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if d, err := time.ParseDuration(f.DefValue); err == nil && strings.ContainsAny(f.DefValue, "hms") {
		if d%time.Minute == 0 {
			return fmt.Sprintf("%dm", int(d/time.Minute))
		}
		return d.String()
	}
	return f.DefValue
}
