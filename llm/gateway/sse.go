package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sse writes server-sent events. The gateway asks its provider for whole
// answers and replays each as a stream, so a streamed call is metered from
// the usage of its final answer like any other.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w: w}
}

// event writes one event; an empty name writes a data line only (OpenAI
// chat completions).
func (s sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s sse) done() {
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
