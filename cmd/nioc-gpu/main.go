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
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
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
	stop := startProfile(os.Getenv("NIOC_CPUPROFILE"))
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole run to path (go tool pprof reads it) when
// path is not empty, and returns the function that finishes it.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nioc-gpu: NIOC_CPUPROFILE=%s: %v\n", path, err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
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
// (a module version, or a pseudo-version from the VCS for a build in a checkout), else "devel".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
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
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `nioc-gpu <command> -h` for a command's flags, `nioc-gpu --version` for the version.")
	fmt.Fprintln(w, "Backend: --backend go (pure Go, default) or xla; or set NIOC_BACKEND (and NIOC_PJRT=cpu|cuda|/path/plugin.so).")
}

// newFlags returns a flag set for a command that prints its usage to stderr.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nioc-gpu %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors and rejecting positional
// arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with --)", strings.Join(fs.Args(), " "))
	}
	return nil
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
