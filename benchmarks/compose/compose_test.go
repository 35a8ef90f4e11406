package compose

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeEnv(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "environment")
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A file written for Harbor: main built from the folder with the
// harness's log mounts and a host path, a sidecar from another Dockerfile.
const harborFile = `services:
  main:
    build:
      context: .
      dockerfile: Dockerfile
    image: ${MAIN_IMAGE_NAME:-task-main}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - API_URL=http://api:4000
      - LIMIT=${CPUS:-9}
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH:-./logs}:${ENV_VERIFIER_LOGS_PATH:-/logs}
      - ./data:/data:ro
      - /etc:/host-etc:ro
      - cache:/cache
    depends_on:
      api:
        condition: service_healthy
    networks: [task-net]
    deploy:
      resources:
        limits:
          cpus: ${CPUS:-2}
          memory: ${MEMORY:-4096M}
  api:
    build:
      context: .
      dockerfile: Dockerfile.api
    expose: ["4000"]
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      retries: 5
    volumes:
      - cache:/cache
    networks: [task-net]
    depends_on: [seed]
  seed:
    image: harness-base:bookworm
    command: ["true"]
    networks: [task-net]
networks:
  task-net:
    driver: bridge
volumes:
  cache: {}
`

func TestLoadHarborFile(t *testing.T) {
	dir := writeEnv(t, map[string]string{
		"docker-compose.yaml": harborFile,
		"Dockerfile":          "FROM harness-base:bookworm\n",
		"Dockerfile.api":      "FROM harness-base:bookworm\n",
		"data/a.txt":          "a\n",
	})
	p, err := Load(context.Background(), dir, Vars(1.5, 512))
	if err != nil {
		t.Fatal(err)
	}
	if p.Main == nil || p.Main.Build == nil || p.Main.Build.Context != dir || p.Main.Build.Dockerfile != "Dockerfile" {
		t.Fatalf("main = %+v", p.Main)
	}
	if want := []string{"API_URL=http://api:4000", "LIMIT=1.5"}; !slices.Equal(p.Main.Env, want) {
		t.Errorf("main env %q, want %q", p.Main.Env, want)
	}
	if len(p.Main.Copies) != 1 || p.Main.Copies[0].Source != filepath.Join(dir, "data") || p.Main.Copies[0].Target != "/data" {
		t.Errorf("main copies %+v: want only ./data on /data (logs are the harness's, /etc is outside)", p.Main.Copies)
	}
	if p.Main.MemoryBytes != 512<<20 || p.Main.CPUs != 1.5 {
		t.Errorf("main limits %v CPUs %d bytes", p.Main.CPUs, p.Main.MemoryBytes)
	}
	var names []string
	for _, s := range p.Sidecars {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"seed", "api"}) {
		t.Errorf("sidecars start as %q, want seed before api", names)
	}
	api := p.Sidecars[1]
	if api.Build == nil || api.Build.Dockerfile != "Dockerfile.api" || api.Health == nil || api.Health.Retries != 5 {
		t.Errorf("api = %+v", api)
	}
	if !slices.Equal(p.Volumes, []string{"cache"}) {
		t.Errorf("volumes %q", p.Volumes)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "/etc on /host-etc is ignored") {
		t.Errorf("warnings %q, want one about the host mount", p.Warnings)
	}
}

// Features the harness does not honour are each named; a file without a
// compose file gives nothing, and one that cannot run is an error.
func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    []string
		wantErr string
	}{
		{"none", "", nil, ""},
		{"unsupported", `services:
  main:
    image: harness-base:bookworm
    privileged: true
    ports: ["8080:80"]
    cap_add: [NET_ADMIN]
    network_mode: host
`, []string{"services.main.cap_add", "services.main.network_mode", "services.main.ports", "services.main.privileged"}, ""},
		{"no main", "services:\n  db:\n    image: harness-base:bookworm\n", []string{`no service named "main"`}, ""},
		{"context outside", "services:\n  main:\n    build: ..\n", nil, "outside the task's environment folder"},
		{"neither build nor image", "services:\n  main:\n    command: [\"true\"]\n", nil, "neither an image nor a build"},
		{"cycle", "services:\n  main:\n    image: a\n    depends_on: [b]\n  b:\n    image: b\n    depends_on: [main]\n", nil, "cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"Dockerfile": "FROM x\n"}
			if tt.file != "" {
				files["docker-compose.yaml"] = tt.file
			}
			w, err := Validate(writeEnv(t, files))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(w) != len(tt.want) {
				t.Fatalf("warnings %q, want %d naming %q", w, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(w[i], want) {
					t.Errorf("warning %q lacks %q", w[i], want)
				}
			}
		})
	}
}

// A host mount whose source names a variable this host does not set is
// ignored with a warning that names the variable, as other host mounts the
// harness cannot honour are; the rest of the file still runs, and unset
// variables elsewhere still read as empty.
func TestUnsetVariableInAHostMountIsAWarning(t *testing.T) {
	const plain, required = "HARNESS_TEST_UNSET_MOUNT_DIR", "HARNESS_TEST_UNSET_REQUIRED"
	for _, v := range []string{plain, required} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	dir := writeEnv(t, map[string]string{
		"docker-compose.yaml": `services:
  main:
    image: harness-base:bookworm
    environment:
      - TOKEN=${` + plain + `}
    volumes:
      - ${` + plain + `}:/credentials
      - type: bind
        source: ${` + required + `:?set it to the data folder}/x
        target: /x
      - ${` + plain + `:-./data}:/data
`,
		"data/a.txt": "a\n",
	})
	p, err := Load(context.Background(), dir, Vars(1, 512))
	if err != nil {
		t.Fatalf("the file failed although only mounts the harness ignores name unset variables: %v", err)
	}
	if len(p.Main.Copies) != 1 || p.Main.Copies[0].Target != "/data" {
		t.Errorf("copies %+v, want only ./data (the default) on /data", p.Main.Copies)
	}
	if !slices.Contains(p.Main.Env, "TOKEN=") {
		t.Errorf("env %q, want TOKEN empty as before", p.Main.Env)
	}
	for _, want := range []string{plain + " is not set", required + " is not set"} {
		if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, want) && strings.Contains(w, "is ignored") }) {
			t.Errorf("warnings %q lack one saying %q", p.Warnings, want)
		}
	}
}

// A build context without its Dockerfile is an error naming the service
// and the file; the warnings found before an error are returned with it;
// the obsolete version attribute is a warning, not a line on stderr.
func TestValidateFlagsMissingDockerfileAndKeepsWarnings(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
		wantWarnings        []string
	}{
		{"sidecar without Dockerfile", "services:\n  main:\n    image: a\n  db:\n    build:\n      context: ./db\n",
			"service db: its build context", nil},
		{"named Dockerfile missing", "services:\n  main:\n    image: a\n  api:\n    build:\n      context: .\n      dockerfile: Dockerfile.api\n",
			"has no Dockerfile.api", nil},
		{"warnings with an error", "services:\n  main:\n    image: a\n    privileged: true\n  db:\n    build: ..\n",
			"outside the task's environment folder", []string{"services.main.privileged"}},
		{"version", "version: \"3.8\"\nservices:\n  main:\n    image: a\n", "", []string{"version attribute is obsolete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeEnv(t, map[string]string{"docker-compose.yaml": tt.file, "db/init.sql": "select 1;\n"})
			w, err := Validate(dir)
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
			for _, want := range tt.wantWarnings {
				if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("warnings %q lack %q", w, want)
				}
			}
		})
	}
}
