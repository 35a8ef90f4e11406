package slurmtest

import (
	"strings"
	"testing"
	"time"
)

// A started cluster runs a two-element job array to completion.
func TestClusterRunsAnArray(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Slurm daemons")
	}
	c := Start(t)
	out, err := c.Command(t.Context(), "sbatch", "--parsable", "--array=0-1", "--output="+c.Dir+"/hello_%a.out", "--wrap=hostname")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		out, err := c.Command(t.Context(), "squeue", "--noheader", "--jobs="+id)
		if err == nil && strings.TrimSpace(string(out)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still queued after 60s: %s", id, out)
		}
	}
	for _, i := range []string{"0", "1"} {
		out, err := c.Command(t.Context(), "scontrol", "--oneliner", "show", "job", id+"_"+i)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "JobState=COMPLETED") {
			t.Errorf("element %s: %s", i, out)
		}
	}
}
