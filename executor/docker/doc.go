// Package docker is the sandbox backend on a Docker Engine: it builds and
// caches task images from their build contexts, starts locked-down
// containers with the task's limits, runs commands and copies files in
// them, and removes what the harness left behind (GC).
package docker
