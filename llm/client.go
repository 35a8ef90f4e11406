package llm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/config"
)

// Client is a provider bound to a role and a ledger: every call is checked
// against the budget first and charged afterwards.
type Client struct {
	Provider Provider
	// Ledger may be nil: calls are then neither checked nor charged.
	Ledger *Ledger
	// Role is the model role (one of conditions.ModelRoles()); it is the ledger
	// caller when a request names none.
	Role string
	// Model is the configured model id, written in call records.
	Model string
	// Recorder, when set, is given a record of every call, failed ones
	// included.
	Recorder CallRecorder
	// Gate, when set, caps the calls in flight to the client's model
	// endpoint, shared with every client given the same gate.
	Gate *Gate
	// Redactor, when set, replaces every configured key value in the
	// provider's answers and errors before anything else sees them.
	Redactor *config.Redactor
	// player answers the client's calls when its provider is offline (see
	// WithPlayer).
	player Player
}

// ErrModelCall is wrapped by every error of a call the model provider did
// not answer (after its own retries): the endpoint, not the caller, failed.
// Its ModelFailure method, which CallError has too, lets code that does not
// import this package recognise it (the trial contract,
// executor.IsModelFailure).
var ErrModelCall error = modelCallFailed{}

type modelCallFailed struct{}

func (modelCallFailed) Error() string { return "model call" }

// ModelFailure reports true: the model's endpoint failed the call.
func (modelCallFailed) ModelFailure() bool { return true }

// Complete refuses with an error wrapping ErrBudgetExhausted when the
// budget is spent, otherwise calls the provider and charges the ledger
// under req.Caller (or the client's role). The call is recorded either way.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	resp, rec, err := c.call(ctx, req)
	c.record(rec)
	return resp, err
}

// call makes one call and returns its record unwritten, so that Structured
// can add what it makes of the answer first.
func (c *Client) call(ctx context.Context, req Request) (Response, CallRecord, error) {
	if c == nil || c.Provider == nil {
		return Response{}, CallRecord{}, fmt.Errorf("model client has no provider")
	}
	if req.Caller == "" {
		req.Caller = c.Role
	}
	if c.player != nil {
		req.player = c.player
	}
	rec := CallRecord{Start: time.Now(), Caller: req.Caller, Role: c.Role, Model: c.Model, Offline: c.Provider.Offline(), Request: req}
	if c.Ledger != nil {
		if err := c.Ledger.Check(); err != nil {
			rec.Err = fmt.Errorf("call for %s refused: %w", req.Caller, err)
			return Response{}, rec, rec.Err
		}
	}
	release, err := c.Gate.acquire(ctx)
	if err != nil {
		rec.Err = fmt.Errorf("call for %s: wait for a free connection to the model (max_connections %d): %w", req.Caller, c.Gate.Limit(), err)
		return Response{}, rec, rec.Err
	}
	resp, err := c.Provider.Complete(ctx, req)
	release()
	resp.Message = RedactMessage(c.Redactor, resp.Message)
	err = c.Redactor.Error(err)
	rec.Latency = time.Since(rec.Start)
	rec.Attempts = resp.Attempts
	if err != nil {
		rec.Retries = max(resp.Attempts-1, 0)
		rec.Err = &CallError{Caller: req.Caller, Err: err}
		if resp.Attempts > 0 {
			// A call that was sent is counted, and charged, even when it failed.
			u := resp.Usage
			u.Calls, u.Failures, u.Retries = 1, 1, int64(rec.Retries)
			rec.Charged = c.charge(req.Caller, u, resp.Unreported)
		}
		return Response{}, rec, rec.Err
	}
	if resp.Usage.Calls == 0 {
		resp.Usage.Calls = 1
	}
	if resp.Attempts > 1 {
		resp.Usage.Retries = int64(resp.Attempts - 1)
	}
	rec.Retries = int(resp.Usage.Retries)
	if rec.Model == "" {
		rec.Model = resp.Model
	}
	rec.Charged = c.charge(req.Caller, resp.Usage, resp.Unreported)
	r := resp
	rec.Response = &r
	return resp, rec, nil
}

// charge charges the ledger with a call's usage, and with its attempts that
// reported none when the ledger charges what was sent; it returns what it
// charged.
func (c *Client) charge(caller string, u, unreported Usage) Usage {
	if c.Ledger == nil {
		return u
	}
	if c.Ledger.chargesSent() && !unreported.empty() {
		u = u.Add(unreported)
	}
	c.Ledger.Charge(caller, u)
	return u
}

func (c *Client) record(rec CallRecord) {
	if c != nil && c.Recorder != nil && !rec.Start.IsZero() {
		c.Recorder.Record(rec)
	}
}

// Offline reports whether the client's provider answers synthetically.
func (c *Client) Offline() bool { return c.Provider != nil && c.Provider.Offline() }

// HasPrice reports whether both token prices of a model are configured.
func HasPrice(m config.Model) bool {
	return m.PriceInputPerMTok != nil && m.PriceOutputPerMTok != nil
}

// Price is what u costs at m's prices, which must be set (HasPrice): input
// read from the endpoint's prompt cache at the cached-input price when one
// is configured, else as fresh input.
func Price(m config.Model, u Usage) float64 {
	cached := min(max(u.CachedInputTokens, 0), u.InputTokens)
	cachedPrice := *m.PriceInputPerMTok
	if m.PriceCachedInputPerMTok != nil {
		cachedPrice = *m.PriceCachedInputPerMTok
	}
	return (float64(u.InputTokens-cached)**m.PriceInputPerMTok + float64(cached)*cachedPrice +
		float64(u.OutputTokens)**m.PriceOutputPerMTok) / 1e6
}

// ValidatePrices refuses a dollar budget when some non-offline model has no
// price, since its spending could not be counted. models maps role to model.
func ValidatePrices(models map[string]config.Model, maxUSD float64) error {
	if maxUSD <= 0 {
		return nil
	}
	roles := slices.Sorted(maps.Keys(models))
	var missing []string
	for _, role := range roles {
		m := models[role]
		if m.Provider == ProviderOffline || HasPrice(m) {
			continue
		}
		missing = append(missing, fmt.Sprintf("model %s for role %s has no price", m.Model, role))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s; a dollar budget needs prices for every model (set price_input_per_mtok and price_output_per_mtok, or drop the dollar budget)",
			strings.Join(missing, "; "))
	}
	return nil
}
