//go:build !linux

package dockertest

import "testing"

// StartEngine ends the test through Unavailable: a second engine is
// started only on Linux.
func StartEngine(t testing.TB) string {
	t.Helper()
	Unavailable(t, "a second Docker engine is started only on Linux")
	return ""
}
