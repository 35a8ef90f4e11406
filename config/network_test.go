package config

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// A configuration without [network] encodes without the table, so adding
// the section left every earlier run's fingerprint as it was; one with it
// keeps it through layering, cloning and the resolved file.
func TestNetworkSection(t *testing.T) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(mustDefault(t).Clone()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "[network]") {
		t.Errorf("the default configuration encodes a [network] table:\n%s", buf.String())
	}
	dir := t.TempDir()
	layer := "[network]\nlabs = [\"a\", \"b\"]\ntopology = \"full\"\ndiffusion_interval = 2\n"
	if err := os.WriteFile(filepath.Join(dir, LayerFile), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Clone().Network
	if n == nil || !slices.Equal(n.Labs, []string{"a", "b"}) || n.Topology != "full" || n.DiffusionInterval != 2 {
		t.Fatalf("loaded [network] = %+v", n)
	}
	if Fingerprint(c) == Fingerprint(mustDefault(t)) {
		t.Error("a [network] table leaves the fingerprint unchanged")
	}
	buf.Reset()
	if err := WriteResolved(&buf, c, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(buf.Bytes(), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if back.Network == nil || !slices.Equal(back.Network.Labs, n.Labs) || Fingerprint(back) != Fingerprint(c) {
		t.Errorf("resolved file lost [network]: %+v", back.Network)
	}
}
