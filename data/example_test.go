package data_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/nioc-gpu/nioc-gpu/data"
)

// This example writes a small set of pendulum trajectories to a file, reads
// it back, and shows the error for a malformed file.
func Example() {
	states := []string{"theta", "omega"}
	set := &data.Set{
		StateNames: states,
		Steps:      2,
		Subjects: []data.Subject{
			{ID: "S1", Trials: []data.Trial{
				{ID: 0, States: [][]float64{{0.1, 0}, {0.15, 0.5}, {0.25, 1}}},
			}},
			{ID: "S2", Trials: []data.Trial{
				{ID: 0, States: [][]float64{{-0.2, 0}, {-0.25, -0.5}, {-0.35, -1}}},
				{ID: 1, States: [][]float64{{1, 0}, {0.9, -1}, {0.7, -2}}},
			}},
		},
	}

	dir, err := os.MkdirTemp("", "data-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pendulum.csv")
	if err := data.Write(path, set); err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(b))

	got, err := data.Read(path, states)
	if err != nil {
		log.Fatal(err)
	}
	s2, _ := got.Subject("S2")
	fmt.Printf("%d subjects, %d trials of %d steps; S2 trial 1 ends at theta = %g\n",
		len(got.Subjects), got.NumTrials(), got.Steps, s2.Trials[1].States[got.Steps][0])

	bad := "trial,t,theta,omega\n0,0,0.1,0\n0,1,0.2,abc\n"
	_, err = data.ReadFrom(strings.NewReader(bad), "bad.csv", states)
	fmt.Println(err)
	var e *data.Error
	if errors.As(err, &e) {
		fmt.Printf("line %d, column %s\n", e.Line, e.Column)
	}

	// Output:
	// subject,trial,t,theta,omega
	// S1,0,0,0.1,0
	// S1,0,1,0.15,0.5
	// S1,0,2,0.25,1
	// S2,0,0,-0.2,0
	// S2,0,1,-0.25,-0.5
	// S2,0,2,-0.35,-1
	// S2,1,0,1,0
	// S2,1,1,0.9,-1
	// S2,1,2,0.7,-2
	// 2 subjects, 3 trials of 2 steps; S2 trial 1 ends at theta = 0.7
	// bad.csv line 3, column "omega": "abc" is not a number
	// line 3, column omega
}
