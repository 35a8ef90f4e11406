package executor

import (
	"errors"
	"strings"
	"testing"
)

func TestEnvErrorUnwraps(t *testing.T) {
	base := errors.New("boom")
	err := error(&EnvError{Op: "build image for task x", Err: base, Log: "Step 1/2"})
	if !errors.Is(err, base) || !strings.Contains(err.Error(), "build image for task x: boom") || !strings.Contains(err.Error(), "Step 1/2") {
		t.Errorf("EnvError = %q", err)
	}
}
