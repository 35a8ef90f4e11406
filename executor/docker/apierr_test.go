package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestInWords(t *testing.T) {
	raw := "http://%2Fvar%2Frun%2Fdocker.sock/v1.41/containers/abc/archive?path=%2F"
	deadline := &url.Error{Op: "Put", URL: raw, Err: context.DeadlineExceeded}
	reset := &url.Error{Op: "Post", URL: raw, Err: errors.New("connection reset by peer")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"deadline", fmt.Errorf("copy solution into /solution: %w", deadline),
			"copy solution into /solution: the Docker engine did not answer in time (context deadline exceeded)"},
		{"reset", reset, "the request to the Docker engine failed: connection reset by peer"},
		{"plain", errors.New("no such container"), "no such container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inWords(tt.err)
			if got.Error() != tt.want {
				t.Errorf("inWords = %q, want %q", got, tt.want)
			}
			if strings.Contains(got.Error(), "http://") {
				t.Errorf("the error still shows the URL: %q", got)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("the error no longer unwraps to the original")
			}
		})
	}
	if !errors.Is(inWords(deadline), context.DeadlineExceeded) {
		t.Error("a deadline no longer reads as context.DeadlineExceeded")
	}
	if inWords(nil) != nil {
		t.Error("inWords(nil) is not nil")
	}
}
