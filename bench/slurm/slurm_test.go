// Package slurm holds the check that the Slurm recipe of docs/guide.md works: check.sh starts a
// one-node Slurm, runs the array job with one task requeued midway, and compares the merged
// shards with a single-process fit (docs/guide.md, "Fitting many subjects"; make slurm-check).
package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSlurmCheck runs check.sh with a freshly built nioc-gpu. It takes about a minute and
// starts daemons as root, so it runs only with NIOC_SLURM=1 (make slurm-check runs the script
// directly); otherwise, and without Slurm, it skips at once.
func TestSlurmCheck(t *testing.T) {
	if _, err := exec.LookPath("slurmctld"); err != nil {
		if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil {
			t.Skip("slurm-check: slurmctld not installed (apt-get install slurm-wlm); see make slurm-check")
		}
	}
	if os.Getenv("NIOC_SLURM") != "1" {
		t.Skip("slurm-check: starts a one-node Slurm as root for about a minute; run with NIOC_SLURM=1 or make slurm-check")
	}
	if os.Geteuid() != 0 {
		t.Skip("slurm-check: needs root (slurmd starts the jobs); see make slurm-check")
	}
	bin := filepath.Join(t.TempDir(), "nioc-gpu")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/nioc-gpu")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "check.sh")
	cmd.Env = append(os.Environ(), "NIOC_BIN="+bin)
	out, err := cmd.CombinedOutput()
	t.Logf("check.sh:\n%s", out)
	if err != nil {
		t.Fatalf("check.sh: %v", err)
	}
}
