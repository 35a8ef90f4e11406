package report

import (
	"context"
	"os"
	"testing"
)

func BenchmarkTmpReportDir(b *testing.B) {
	dir := os.Getenv("TMPDIR_MATRIX")
	if dir == "" {
		b.Skip()
	}
	for b.Loop() {
		if _, err := Write(context.Background(), dir, b.TempDir()); err != nil {
			b.Fatal(err)
		}
	}
}
