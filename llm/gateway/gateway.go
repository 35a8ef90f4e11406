// Package gateway is the model endpoint an installed agent talks to. It
// speaks the agent's API shape (OpenAI chat completions, the OpenAI
// Responses API, Anthropic messages, or Google's Gemini API), checks a
// token that is worthless outside one trial, and turns each call into one
// llm.Client call, so the agent's model calls go through the same ledger,
// budget, call log and redactor as the lab's own, and the real key never
// reaches the agent.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// maxBody caps a request body: an agent's whole transcript fits well below.
const maxBody = 64 << 20

// Gateway serves one trial's model endpoint.
type Gateway struct {
	// Client makes every call: its ledger, budget, recorder, redactor and
	// offline player apply to the agent's calls as to any other.
	Client *llm.Client
	// Caller is the ledger path the calls are charged to (executor/<student>).
	Caller string
	// API is the shape served (config.APIShapes).
	API string
	// Token is what the agent must present as its API key.
	Token string
	// Seed is passed with every call.
	Seed int64

	mu       sync.Mutex
	calls    []Call
	budget   error
	upstream error
}

// Call is the gateway's record of one call: the trajectory as the model saw it.
type Call struct {
	Start    time.Time
	Latency  time.Duration
	Request  llm.Request
	Response *llm.Response
	Err      string
	Stream   bool
}

// NewToken returns a fresh random token for one trial.
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the gateway's token: %w", err)
	}
	return "harness-trial-" + hex.EncodeToString(b), nil
}

// Calls returns the calls served so far, in order.
func (g *Gateway) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Call(nil), g.calls...)
}

// Err returns the first call error that should end the agent's trial as
// the harness's, not the agent's: the budget spent, or the model endpoint
// failing (nil when neither happened).
func (g *Gateway) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.budget != nil {
		return g.budget
	}
	return g.upstream
}

// Serve answers on ln until ctx ends, then closes it.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler routes the shape's paths; anything else is refused.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	switch g.API {
	case config.APIOpenAI:
		mux.HandleFunc("POST /v1/chat/completions", g.authorized(g.chat))
	case config.APIOpenAIResponses:
		mux.HandleFunc("POST /v1/responses", g.authorized(g.responses))
	case config.APIAnthropic:
		mux.HandleFunc("POST /v1/messages", g.authorized(g.messages))
		mux.HandleFunc("POST /v1/messages/count_tokens", g.authorized(g.countTokens))
	case config.APIGemini:
		// v1beta is what Google's SDKs call; v1 when an agent pins it.
		mux.HandleFunc("POST /v1beta/models/{call}", g.authorized(g.gemini))
		mux.HandleFunc("POST /v1/models/{call}", g.authorized(g.gemini))
		mux.HandleFunc("GET /v1beta/models", g.authorized(g.geminiModels))
	}
	mux.HandleFunc("GET /v1/models", g.authorized(g.models))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("%s %s is not served: this endpoint speaks the %q API only", r.Method, r.URL.Path, g.API))
	})
	return mux
}

// authorized lets a request through only with the trial's token, as a
// bearer token (OpenAI), x-api-key (Anthropic), or x-goog-api-key or the
// key query parameter (Gemini).
func (g *Gateway) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("x-api-key")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			got = bearer
		}
		if got == "" {
			got = r.Header.Get("x-goog-api-key")
		}
		if got == "" {
			got = r.URL.Query().Get("key")
		}
		if g.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(g.Token)) != 1 {
			g.fail(w, http.StatusUnauthorized, "authentication_error", "invalid API key: use the key in the trial's environment")
			return
		}
		h(w, r)
	}
}

func (g *Gateway) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{"id": g.Client.Model, "object": "model", "owned_by": "harness"}}})
}

// decode reads a JSON request body into v, answering 400 itself on failure.
func (g *Gateway) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		g.fail(w, http.StatusBadRequest, "invalid_request_error", "read the request body: "+err.Error())
		return false
	}
	return true
}

// complete makes one call through the client and records it. On an error
// it has already answered the agent, and returns false.
func (g *Gateway) complete(w http.ResponseWriter, r *http.Request, req llm.Request, stream bool) (llm.Response, bool) {
	req.Caller, req.Kind, req.Seed = g.Caller, llm.KindAgentStep, g.Seed
	call := Call{Start: time.Now(), Request: req, Stream: stream}
	resp, err := g.Client.Complete(r.Context(), req)
	call.Latency = time.Since(call.Start)
	g.mu.Lock()
	if err != nil {
		call.Err = err.Error()
		switch {
		case errors.Is(err, llm.ErrBudgetExhausted) && g.budget == nil:
			g.budget = err
		case modelFailure(err) && g.upstream == nil:
			g.upstream = err
		}
	} else {
		call.Response = &resp
	}
	g.calls = append(g.calls, call)
	g.mu.Unlock()
	if err != nil {
		status, kind := http.StatusBadGateway, "api_error"
		if errors.Is(err, llm.ErrBudgetExhausted) {
			// Not 429: agents retry that, and the budget will not come back.
			status, kind = http.StatusForbidden, "budget_exhausted"
		}
		g.fail(w, status, kind, err.Error())
		return llm.Response{}, false
	}
	return resp, true
}

// fail answers an error in the shape's error body.
func (g *Gateway) fail(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"error": map[string]any{"type": kind, "message": msg, "code": kind}}
	switch g.API {
	case config.APIAnthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
	case config.APIGemini:
		body = map[string]any{"error": map[string]any{"code": status, "message": kind + ": " + msg, "status": googleStatus(status)}}
	}
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// callID is an id for a response object, unique within the trial.
func (g *Gateway) callID(prefix string) string {
	g.mu.Lock()
	n := len(g.calls)
	g.mu.Unlock()
	return fmt.Sprintf("%s_%04d", prefix, n)
}

// modelFailure reports whether the model's endpoint, not the request,
// failed the call (llm.CallError and llm.ErrModelCall say so).
func modelFailure(err error) bool {
	var mf interface{ ModelFailure() bool }
	return errors.As(err, &mf) && mf.ModelFailure()
}
