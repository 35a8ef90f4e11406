package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestLoadDockerHosts(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []DockerHost
		wantErr string
	}{
		{
			name: "array of tables",
			body: "[executor_runtime]\nbackend = \"docker\"\n[[executor_runtime.docker_hosts]]\nhost = \"unix:///run/a.sock\"\ncapacity = 2\n" +
				"[[executor_runtime.docker_hosts]]\nhost = \"ssh://harness@node2\"\ncapacity = 4\n",
			want: []DockerHost{{Host: "unix:///run/a.sock", Capacity: 2}, {Host: "ssh://harness@node2", Capacity: 4}},
		},
		{
			name: "inline array",
			body: "[executor_runtime]\ndocker_hosts = [{host = \"tcp://node1:2376\", capacity = 1}]\n",
			want: []DockerHost{{Host: "tcp://node1:2376", Capacity: 1}},
		},
		{
			name:    "misspelt key inside a table",
			body:    "[[executor_runtime.docker_hosts]]\nhost = \"tcp://node1:2376\"\ncapacty = 1\n",
			wantErr: `unknown key "executor_runtime.docker_hosts.capacty" (did you mean "capacity"?)`,
		},
		{
			name:    "a string instead of tables",
			body:    "[executor_runtime]\ndocker_hosts = \"tcp://node1:2376\"\n",
			wantErr: "must be an array of tables",
		},
		{
			name:    "unknown backend names the valid ones",
			body:    "[executor_runtime]\nbackend = \"k8s\"\n",
			wantErr: `executor_runtime.backend must be one of docker (got "k8s")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeLayer(t, tt.body)
			c, err := Load(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.ExecutorRuntime.DockerHosts; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("docker_hosts = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Where trials run cannot change what they measure: a run may resume on
// other engines.
func TestFingerprintIgnoresEngines(t *testing.T) {
	c := mustDefault(t)
	before := Fingerprint(c)
	c.ExecutorRuntime.Backend = BackendDocker
	c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "tcp://node1:2376", Capacity: 3}}
	if after := Fingerprint(c); after != before {
		t.Error("the fingerprint changed with docker_hosts")
	}
}

func TestCloneCopiesDockerHosts(t *testing.T) {
	c := mustDefault(t)
	c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "tcp://node1:2376", Capacity: 3}}
	d := c.Clone()
	d.ExecutorRuntime.DockerHosts[0].Capacity = 9
	if c.ExecutorRuntime.DockerHosts[0].Capacity != 3 {
		t.Error("the clone shares docker_hosts with the original")
	}
}
