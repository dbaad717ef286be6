// Command nioc-gpu is probabilistic inverse optimal control for non-linear, partially
// observable, stochastic agents (Straub, Schultheis, Koeppl & Rothkopf, NeurIPS 2023): it
// simulates the tasks' agents, evaluates the likelihood of observed state trajectories, and
// fits the agents' costs and noises to them.
//
// Run `nioc-gpu help` for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"time"
)

// command is one subcommand of the tool.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// usageError marks errors in the command line (exit status 2).
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	if os.Getenv("GOGC") == "" {
		// Building a likelihood graph allocates a million small objects; collecting half as
		// often makes fits 5–10 % faster at about the same peak memory (docs/speed.md).
		debug.SetGCPercent(200)
	}
	// A CPU profile of the whole run for go tool pprof, and Go's execution trace for go tool
	// trace (which goroutine ran on which core when, each cgo call into XLA).
	stopProfile := startRecording("NIOC_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := startRecording("NIOC_GOTRACE", trace.Start, trace.Stop)
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stopTrace()
	stopProfile()
	os.Exit(code)
}

// startRecording starts a recording of the run (start, stopped by stop) into the file that
// the environment variable env names, if it names one, and returns the function that ends it
// and closes the file. A file it cannot create or a recording that will not start is reported
// on stderr and the run goes on without it.
func startRecording(env string, start func(io.Writer) error, stop func()) (end func()) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = start(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nioc-gpu: %s=%s: %v\n", env, path, err)
		return func() {}
	}
	return func() { stop(); _ = f.Close() }
}

// run executes the command line args and returns the exit status: 0 success, 1 failure,
// 2 a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	if args[0] == "--version" || args[0] == "-version" {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "nioc-gpu: %s takes no arguments, got %q\n", args[0], strings.Join(args[1:], " "))
			return 2
		}
		fmt.Fprintf(stdout, "nioc-gpu %s\n", versionString())
		return 0
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "nioc-gpu help: unknown command %q\n\n", args[1])
				printUsage(stderr)
				return 2
			}
			_ = c.run([]string{"-h"}, stdout, stdout)
			return 0
		}
		printUsage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "nioc-gpu: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errInterrupted):
		return 130
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "nioc-gpu %s: %v\n", c.name, err)
		fmt.Fprintf(stderr, "run `nioc-gpu %s -h` for help\n", c.name)
		return 2
	default:
		fmt.Fprintf(stderr, "nioc-gpu %s: %v\n", c.name, err)
		return 1
	}
}

// version is the release, set when building with -ldflags "-X main.version=v1.2.3"; empty
// means versionString's fallbacks.
var version string

// versionString returns version, else the main module's version recorded by the Go toolchain
// (a module version, or a pseudo-version from the VCS for a build in a checkout), else the
// VCS revision the toolchain stamped ("devel+" and 12 hex digits, "-dirty" with local
// changes), else "devel". Results record it ("version"); "devel" is never compared.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel+" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}

// printUsage prints the list of commands.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "nioc-gpu: probabilistic inverse optimal control for partially observable agents")
	fmt.Fprintln(w, "\nUsage: nioc-gpu <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `nioc-gpu <command> -h` for a command's flags, `nioc-gpu --version` for the version.")
	fmt.Fprintln(w, "Backend: --backend go (pure Go, default) or xla; or set NIOC_BACKEND (and NIOC_PJRT=cpu|cuda|/path/plugin.so).")
}

// newFlags returns a flag set for a command that prints its usage to stderr.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { writeUsage(stderr, name, usage, fs) }
	return fs
}

// parseFlags parses args, turning flag errors into usage errors (parseFlagsArgs) and rejecting
// positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", strings.Join(fs.Args(), " "))
	}
	return nil
}

// parseFlagsArgs parses args, which may end in positional arguments (fs.Args), turning flag
// errors into usage errors. A flag error is one line, without the usage that flag prints
// after it: a value that a flag refuses names the flag and what it takes (refusedValue), e.g.
// `--seed must be a non-negative integer, got "-1"`.
func parseFlagsArgs(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	var refused error
	fs.VisitAll(func(f *flag.Flag) { f.Value = checkedValue{Value: f.Value, name: f.Name, refused: &refused} })
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.VisitAll(func(f *flag.Flag) { f.Value = f.Value.(checkedValue).Value })
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case refused != nil:
		return refused
	case err != nil:
		return usageError{err}
	}
	return nil
}

// checkedValue is a flag's value while parseFlags parses: it records the first value that the
// flag refuses in *refused, as a usage error from refusedValue.
type checkedValue struct {
	flag.Value
	name    string
	refused *error
}

func (v checkedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil && *v.refused == nil {
		*v.refused = refusedValue(v.name, s, v.Value, err)
	}
	return err
}

// IsBoolFlag reports whether the flag is a boolean one, which flag parses without a value.
func (v checkedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// refusedValue returns the usage error of flag name refusing value s with err. The flag
// package's numeric, duration and boolean values say only "parse error" or "value out of
// range": for those, the error says what the flag takes, e.g.
// `--seed must be a non-negative integer, got "-1"`; other values' errors are kept, after the
// flag's name.
func refusedValue(name, s string, v flag.Value, err error) error {
	outOfRange := err.Error() == "value out of range"
	g, ok := v.(flag.Getter)
	if !ok || (!outOfRange && err.Error() != "parse error") {
		return usagef("--%s: %v", name, err)
	}
	var want string
	switch g.Get().(type) {
	case bool:
		want = "true or false"
	case int, int64:
		want = "an integer"
		if outOfRange {
			want += fmt.Sprintf(" from %d to %d", int64(math.MinInt64), int64(math.MaxInt64))
		}
	case uint, uint64:
		want = "a non-negative integer"
		if outOfRange {
			want += fmt.Sprintf(" up to %d", uint64(math.MaxUint64))
		}
	case float64:
		want = "a number"
		if outOfRange {
			want = "a finite number"
		}
	case time.Duration:
		want = "a duration such as 90s, 5m or 1h30m"
	default:
		return usagef("--%s: %v", name, err)
	}
	return usagef("--%s must be %s, got %q", name, want, s)
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// required checks that the named string flags were given.
func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if f := fs.Lookup(n); f == nil || f.Value.String() == "" {
			return usagef("--%s is required", n)
		}
	}
	return nil
}
