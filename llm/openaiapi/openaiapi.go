// Package openaiapi is the model provider for any OpenAI-compatible
// chat-completions endpoint. It is the only package that imports the
// OpenAI SDK, so that nothing but the program's composition root, which
// chooses the providers, carries it: the lab, the trial contract and the
// readers build without it.
package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// Defaults for a model configuration that leaves them unset.
const (
	DefaultAttemptTimeout = 2 * time.Minute
	DefaultBackoffBase    = 500 * time.Millisecond
	DefaultBackoffMax     = time.Minute
)

// Backoff shapes the waits between attempts of a model call.
type Backoff struct {
	// Base is the wait before the first retry; each further retry doubles it.
	Base time.Duration
	// Max caps one wait, a server's Retry-After included.
	Max time.Duration
	// Sleep waits for d or until ctx ends; nil waits on a timer. Tests
	// replace it to record the waits without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Option adjusts a Provider.
type Option func(*Provider)

// WithBackoff sets the retry waits (zero fields keep their defaults).
func WithBackoff(b Backoff) Option {
	return func(o *Provider) {
		if b.Base > 0 {
			o.backoff.Base = b.Base
		}
		if b.Max > 0 {
			o.backoff.Max = b.Max
		}
		if b.Sleep != nil {
			o.backoff.Sleep = b.Sleep
		}
	}
}

// WithHTTPClient sends requests through c instead of a default client.
func WithHTTPClient(c *http.Client) Option {
	return func(o *Provider) { o.httpClient = c }
}

// Provider talks to any OpenAI-compatible chat-completions endpoint. It
// retries transient failures itself (the SDK's own retries are off) so that
// timed-out attempts are retried too.
type Provider struct {
	model      config.Model
	svc        openai.ChatCompletionService
	backoff    Backoff
	timeout    time.Duration
	retries    int
	httpClient *http.Client
	// redact keeps the model's key out of every error and answer: an
	// endpoint may repeat it, as OpenAI-style 401 messages do.
	redact *config.Redactor
}

// New returns a provider for m. The API key is read from the
// environment variable m.APIKeyEnv; a missing key is allowed, since local
// servers need none.
func New(m config.Model, opts ...Option) (*Provider, error) {
	if strings.TrimSpace(m.BaseURL) == "" {
		return nil, fmt.Errorf("model %q has no base_url; set it to the endpoint's API root, e.g. https://openrouter.ai/api/v1", m.Model)
	}
	if strings.TrimSpace(m.Model) == "" {
		return nil, fmt.Errorf("model at %s has no model name; set model = \"...\"", m.BaseURL)
	}
	o := &Provider{
		model:   m,
		backoff: Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax},
		timeout: m.Timeout.Duration,
		retries: max(m.MaxRetries, 0),
		redact:  config.NewRedactor([]string{m.APIKey()}),
	}
	if o.timeout <= 0 {
		o.timeout = DefaultAttemptTimeout
	}
	for _, opt := range opts {
		opt(o)
	}
	if o.backoff.Sleep == nil {
		o.backoff.Sleep = sleepCtx
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{}
	}
	// The service is built without openai.NewClient on purpose: that reads
	// OPENAI_* variables from the environment, which could send a key meant
	// for one endpoint to another.
	copts := []option.RequestOption{
		option.WithBaseURL(m.BaseURL),
		option.WithHTTPClient(o.httpClient),
		option.WithMaxRetries(0),
	}
	if key := m.APIKey(); key != "" {
		copts = append(copts, option.WithAPIKey(key))
	}
	o.svc = openai.NewChatCompletionService(copts...)
	return o, nil
}

// Offline reports false: answers come from a real model.
func (o *Provider) Offline() bool { return false }

// StatusError is an HTTP error answer from the model endpoint.
type StatusError struct {
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// transientError marks an attempt failure worth retrying.
type transientError struct {
	err        error
	retryAfter time.Duration
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Complete sends one chat-completions request, retrying 408, 409, 429 and
// 5xx answers, connection errors, timed-out attempts and malformed bodies up
// to the model's max_retries. Usage is that of the successful attempt, plus
// whatever the endpoint reported for failed ones; an answer without usage is
// estimated from its text (a quarter of its characters) and says so in EstimatedTokens.
// Attempts the endpoint received but reported nothing for, a connection
// lost after the whole request was written among them, are estimated in
// Unreported (their input only). A failed call's Response carries Attempts,
// how many were made, and those two usages.
func (o *Provider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := o.complete(ctx, req)
	resp.Message = llm.RedactMessage(o.redact, resp.Message)
	return resp, o.redact.Error(err)
}

func (o *Provider) complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	params, err := o.chatParams(req)
	if err != nil {
		return llm.Response{}, err
	}
	var lastErr error
	var failed, unreported llm.Usage
	inTokens := llm.RequestTokens(req)
	lost := func(attempts int) llm.Response {
		return llm.Response{Attempts: attempts, Usage: failed, Unreported: unreported}
	}
	for attempt := 0; attempt <= o.retries; attempt++ {
		if attempt > 0 {
			var ra time.Duration
			var te *transientError
			if errors.As(lastErr, &te) {
				ra = te.retryAfter
			}
			if err := o.backoff.Sleep(ctx, o.delay(attempt-1, ra)); err != nil {
				// Keep the failure that made it wait: it is the cause a
				// user needs, the cancellation only ended the wait.
				return lost(attempt), fmt.Errorf("model %s: waiting to retry after %v: %w", o.model.Model, lastErr, err)
			}
		}
		resp, sent, err := o.attempt(ctx, params, req)
		if err == nil {
			resp.Attempts = attempt + 1
			resp.Usage = resp.Usage.Add(failed)
			resp.Unreported = unreported
			return resp, nil
		}
		switch {
		case resp.Usage != (llm.Usage{}):
			failed = failed.Add(resp.Usage)
		case sent:
			unreported = unreported.Add(o.priced(llm.Usage{InputTokens: inTokens, EstimatedTokens: inTokens}))
		}
		if ctx.Err() != nil {
			return lost(attempt + 1), fmt.Errorf("model %s: %w", o.model.Model, ctx.Err())
		}
		var te *transientError
		if !errors.As(err, &te) {
			return lost(attempt + 1), fmt.Errorf("model %s at %s: %w", o.model.Model, o.model.BaseURL, err)
		}
		lastErr = err
	}
	return lost(o.retries + 1), fmt.Errorf("model %s at %s: giving up after %d attempts: %w",
		o.model.Model, o.model.BaseURL, o.retries+1, lastErr)
}

// priced fills in the cost of u from the model's prices, when it has them.
func (o *Provider) priced(u llm.Usage) llm.Usage {
	if m := o.model; llm.HasPrice(m) {
		u.CostUSD, u.CostKnown = llm.Price(m, u), true
	}
	return u
}

// delay is the wait before retry number n (0-based): the server's
// Retry-After when it sent one, else exponential backoff with jitter.
func (o *Provider) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, o.backoff.Max)
	}
	d := o.backoff.Base
	for i := 0; i < n && d < o.backoff.Max; i++ {
		d *= 2
	}
	d = min(d, o.backoff.Max)
	// Jitter in [d/2, d) spreads out clients that failed together.
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + rand.Int64N(half))
	}
	return d
}

// attempt makes one HTTP attempt. On failure, sent says whether the endpoint
// received the request (it answered, the attempt timed out waiting, or the
// connection failed after the whole request was written), and the Response
// holds any usage it reported all the same.
func (o *Provider) attempt(ctx context.Context, params openai.ChatCompletionNewParams, req llm.Request) (resp llm.Response, sent bool, err error) {
	// The middleware sees the raw HTTP answer, so the status, Retry-After and
	// error text are known even when the body is not the JSON the SDK expects.
	var status int
	var header http.Header
	var errBody []byte
	watch := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			status, header = res.StatusCode, res.Header.Clone()
			if res.StatusCode >= 400 && res.Body != nil {
				errBody, _ = io.ReadAll(io.LimitReader(res.Body, 64<<10))
				res.Body.Close()
				res.Body = io.NopCloser(bytes.NewReader(errBody))
			}
		}
		return res, err
	}
	var wrote atomic.Bool
	comp, err := o.svc.New(traceWrite(ctx, &wrote), params, option.WithMiddleware(watch), option.WithRequestTimeout(o.timeout))
	if err != nil {
		if ctx.Err() != nil {
			return llm.Response{}, status > 0, ctx.Err()
		}
		switch {
		case status >= 400:
			se := &StatusError{StatusCode: status, Message: o.redact.String(errorMessage(err, errBody))}
			if retryableStatus(status) {
				return llm.Response{}, true, &transientError{err: se, retryAfter: retryAfter(header)}
			}
			return llm.Response{}, true, se
		case errors.Is(err, context.DeadlineExceeded):
			// Also after the headers: a body that stalls is a timeout, not
			// a malformed answer.
			return llm.Response{}, true, &transientError{err: fmt.Errorf("attempt timed out after %s", o.timeout)}
		case status == 0:
			// A connection lost after the request went out (a reset, a
			// proxy that gave up) may have had its prompt read and spent.
			return llm.Response{}, wrote.Load(), &transientError{err: fmt.Errorf("connection: %w", err)}
		default:
			return llm.Response{}, true, &transientError{err: fmt.Errorf("malformed response body (HTTP %d): %w", status, err)}
		}
	}
	if comp == nil || len(comp.Choices) == 0 {
		// The answer is discarded, but what it reported using was used.
		var u llm.Usage
		if comp != nil && reportsUsage(comp) {
			u = o.reportedUsage(comp)
			u.Calls = 0
		}
		return llm.Response{Usage: u}, true, &transientError{err: errors.New("malformed response: no choices")}
	}
	return o.response(comp, req), true, nil
}

// traceWrite returns ctx with a trace that sets wrote once the whole request
// has been written to the connection. The transport reports the write
// before it returns a failed round trip, so wrote is settled by then.
func traceWrite(ctx context.Context, wrote *atomic.Bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	})
}

// reportsUsage reports whether the endpoint said what the answer used:
// some leave usage out, or send it empty.
func reportsUsage(comp *openai.ChatCompletion) bool {
	return comp.JSON.Usage.Valid() && (comp.Usage.PromptTokens > 0 || comp.Usage.CompletionTokens > 0)
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// retryAfter reads Retry-After-Ms or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// errorMessage extracts the server's explanation of an error answer.
func errorMessage(err error, body []byte) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		return apiErr.Message
	}
	var wire struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &wire) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(wire.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if json.Unmarshal(wire.Error, &s) == nil && s != "" {
			return s
		}
		if wire.Message != "" {
			return wire.Message
		}
	}
	return llm.Truncate(strings.TrimSpace(string(body)), 500)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chatParams maps a request onto the SDK's parameters.
func (o *Provider) chatParams(req llm.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: o.model.Model}
	for i, m := range req.Messages {
		mp, err := messageParam(m)
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	switch req.ToolChoice {
	case "":
	case "auto", "required", "none":
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(req.ToolChoice)}
	default:
		p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice})
	}
	if req.Schema != nil {
		name := req.SchemaName
		if name == "" {
			name = "answer"
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: req.Schema}
		// Strict mode is only valid for schemas written for it.
		if ap, ok := req.Schema["additionalProperties"].(bool); ok && !ap {
			js.Strict = openai.Bool(true)
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
		}
	}
	m := o.model
	if m.Temperature != nil {
		p.Temperature = openai.Float(*m.Temperature)
	}
	if m.TopP != nil {
		p.TopP = openai.Float(*m.TopP)
	}
	switch {
	case m.Seed != nil:
		p.Seed = openai.Int(*m.Seed)
	case req.Seed != 0:
		p.Seed = openai.Int(req.Seed)
	}
	if m.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(m.MaxTokens))
	}
	return p, nil
}

// messageParam builds one SDK message. Assistant turns are rebuilt field by
// field: the SDK's ToParam emits null tool calls when a server left out
// their "type", which breaks the next request.
func messageParam(m llm.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case llm.RoleUser:
		return openai.UserMessage(m.Content), nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool result has no tool_call_id")
		}
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case llm.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name: tc.Name, Arguments: tc.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q (want system, user, assistant or tool)", m.Role)
	}
}

func (o *Provider) response(comp *openai.ChatCompletion, req llm.Request) llm.Response {
	ch := comp.Choices[0]
	msg := llm.Message{Role: llm.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	var u llm.Usage
	if reportsUsage(comp) {
		u = o.reportedUsage(comp)
	} else {
		// Charged at an estimate rather than at nothing, so a budget still
		// bounds an endpoint that reports no usage.
		in, out := llm.RequestTokens(req), llm.AnswerTokens(msg)
		u = o.priced(llm.Usage{InputTokens: in, OutputTokens: out, EstimatedTokens: in + out, Calls: 1})
	}
	return llm.Response{Message: msg, Usage: u, FinishReason: string(ch.FinishReason), Model: comp.Model}
}

// reportedUsage is the usage the endpoint reported, priced from the
// configured prices, else at the cost the endpoint reported, if any.
func (o *Provider) reportedUsage(comp *openai.ChatCompletion) llm.Usage {
	u := o.priced(llm.Usage{InputTokens: comp.Usage.PromptTokens, OutputTokens: comp.Usage.CompletionTokens,
		CachedInputTokens: comp.Usage.PromptTokensDetails.CachedTokens, Calls: 1})
	if !u.CostKnown {
		if f, ok := comp.Usage.JSON.ExtraFields["cost"]; ok {
			if c, err := strconv.ParseFloat(strings.Trim(f.Raw(), `"`), 64); err == nil && c >= 0 {
				u.CostUSD, u.CostKnown = c, true
			}
		}
	}
	return u
}

// PreflightTimeout bounds each request of Preflight.
const PreflightTimeout = 30 * time.Second

// Preflight checks once that the endpoint answers and accepts the key: it
// lists the endpoint's models, and where the endpoint has no models list
// (404, 405, 501) it asks for one token of the configured model instead.
// It makes no retries: a run checks before it starts, and a failure here
// means the run could not have succeeded.
func (o *Provider) Preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(o.timeout, PreflightTimeout))
	defer cancel()
	status, msg, err := o.listModels(ctx)
	if err != nil {
		return o.redact.Error(fmt.Errorf("list models at %s: %w", o.model.BaseURL, err))
	}
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented:
		params := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.model.Model),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Reply with one word.")}, MaxTokens: openai.Int(1)}
		if _, err := o.svc.New(ctx, params); err != nil {
			var apiErr *openai.Error
			if errors.As(err, &apiErr) {
				err = &StatusError{StatusCode: apiErr.StatusCode, Message: errorMessage(err, []byte(apiErr.RawJSON()))}
			}
			return o.redact.Error(fmt.Errorf("one-token call to model %s at %s: %w", o.model.Model, o.model.BaseURL, err))
		}
		return nil
	}
	return o.redact.Error(fmt.Errorf("list models at %s: %w", o.model.BaseURL, &StatusError{StatusCode: status, Message: msg}))
}

// listModels sends GET <base_url>/models and returns the status and, for
// an error answer, its message.
func (o *Provider) listModels(ctx context.Context) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(o.model.BaseURL, "/")+"/models", nil)
	if err != nil {
		return 0, "", err
	}
	if key := o.model.APIKey(); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := o.httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 400 {
		return res.StatusCode, "", nil
	}
	return res.StatusCode, o.redact.String(errorMessage(nil, body)), nil
}
