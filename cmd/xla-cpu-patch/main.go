// Command xla-cpu-patch makes the PJRT CPU plugin that `make xla-cpu` installs run each
// program's kernels sequentially on the calling thread (package graph/xlapatch explains why and
// how; docs/backends.md, "Sequential thunks", measures it). `make xla-cpu` runs it on the plugin
// it installs unless XLA_CPU_SEQUENTIAL=0.
//
//	go run ./cmd/xla-cpu-patch [-check] PLUGIN.so
//
// It patches PLUGIN.so in place, or with -check only prints what it is. It refuses any file
// but the one build the patch is made for, recognized by its SHA-256, and leaves it as it is.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/nioc-gpu/nioc-gpu/graph/xlapatch"
)

func main() {
	check := flag.Bool("check", false, "print what the plugin is, patch nothing")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: xla-cpu-patch [-check] PLUGIN.so\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	path := flag.Arg(0)
	var st xlapatch.State
	var err error
	if *check {
		st, err = xlapatch.CPU.Check(path)
	} else {
		st, err = xlapatch.CPU.Patch(path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "xla-cpu-patch:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: thunks %s\n", path, st)
	if *check && st == xlapatch.Unknown {
		os.Exit(1)
	}
}
