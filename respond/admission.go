package respond

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/admission"
	"hearth/telemetry"
)

// Admissions places responses on runtimes with the pool's placement policy and admits
// them to a generation slot of their model (internal/admission: slots, a fair queue
// across keys, rate limits). It is the core's Admitter; the front doors' other
// generating requests (embeddings, the /api passthrough) and vector store ingestion
// queue through it too.
type Admissions struct {
	pool    *pool.Pool
	policy  *pool.Policy
	control *admission.Controller
	// parents finds the runtime of a chain's previous response (nil: no store).
	parents ParentRuntimes
	metrics *telemetry.Metrics
	label   func(model string) string
	log     *slog.Logger
}

// ParentRuntimes says which runtime served a stored response.
type ParentRuntimes interface {
	ResponseRuntime(ctx context.Context, owner, id string) (string, error)
}

// AdmissionsConfig is what Admissions is built from.
type AdmissionsConfig struct {
	Pool      *pool.Pool
	Control   *admission.Controller
	Random    bool // place at random among the runtimes that serve the model
	Parents   ParentRuntimes
	Metrics   *telemetry.Metrics
	ModelName func(model string) string // a model's metric label
	Logger    *slog.Logger
}

// NewAdmissions builds the placement policy over cfg.Pool and cfg.Control.
func NewAdmissions(cfg AdmissionsConfig) *Admissions {
	return &Admissions{pool: cfg.Pool, policy: pool.NewPolicy(cfg.Pool, cfg.Control, cfg.Random), control: cfg.Control,
		parents: cfg.Parents, metrics: cfg.Metrics, label: cfg.ModelName, log: cfg.Logger}
}

// Control is the admission controller the placements are admitted by: its slots and
// queues, for the front doors' views of them (the console's live view).
func (a *Admissions) Control() *admission.Controller { return a.control }

// Place chooses the runtime a response runs on with the pool's placement policy
// (engine/pool/placement.go): the runtime of its chain (previous_response_id's
// response, else the latest of the owner's prompt_cache_key, else fallback: a
// WebSocket's latest response) while it serves the model, else the least loaded. The
// choice is reserved in admission until the request enters it (Admit) or the
// placement is released, whichever comes first.
func (a *Admissions) Place(ctx context.Context, who string, req *hearth.CreateResponseRequest, fallback string) pool.Placed {
	return a.policy.Place(pool.Want{Model: req.Model, Owner: who, CacheKey: req.PromptCacheKey, Fallback: fallback,
		Parent: func() string {
			if req.PreviousResponseID == "" || a.parents == nil {
				return ""
			}
			l, _ := a.parents.ResponseRuntime(ctx, who, req.PreviousResponseID)
			return l
		}})
}

// Served records that a response of who with promptCacheKey ran on runtime.
func (a *Admissions) Served(who, promptCacheKey, runtime string) {
	a.policy.Remember(who, promptCacheKey, runtime)
}

// Admit is AdmitAs as the core's Admitter.
func (a *Admissions) Admit(ctx context.Context, m *Meta, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (Admission, string, error) {
	adm, retry, err := a.AdmitAs(ctx, m, req, responseID, at)
	if err != nil {
		return nil, retry, err
	}
	return adm, "", nil
}

// Admitted is a request's place in admission and what is measured of it.
type Admitted struct {
	a      *Admissions
	ticket *admission.Ticket
	// queued: the request had to wait when it arrived, so it was announced (and
	// stored) as queued.
	queued bool
	model  string
	// placement is the runtime the response runs on (placement.go).
	placement *engine.Placement
}

// AdmitAs asks admission for a slot of the request's model on the runtime its
// placement names (place; a zero placement: placed here). A refusal is a 429 whose
// Retry-After value it returns (queue full, or the key over its rate limit): the HTTP
// caller sets the header, a WebSocket error message carries it.
func (a *Admissions) AdmitAs(ctx context.Context, m *Meta, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (*Admitted, string, error) {
	m.ResponseID = responseID
	if at.Placement == nil {
		at = a.Place(ctx, "", req, "")
	}
	t, retry, err := a.Enter(m, req.Model, at.Placement.Runtime())
	// Entered (or refused): admission counts it now, or not at all.
	at.Release()
	if err != nil {
		return nil, retry, err
	}
	return &Admitted{a: a, ticket: t, queued: !t.Admitted(), model: a.label(req.Model), placement: at.Placement}, "", nil
}

// ingestionFairness is the identity vector store ingestion queues under in
// admission: one party among the keys, so a large ingest gets its fair share of an
// embedding model's slots and no more.
const ingestionFairness = "vector-store-ingestion"

// Ingestion waits for a slot of model for one embedding call of vector store
// ingestion and returns the embedder to make the call with (the runtime it was placed
// on) and the slot's release. A refusal (a full queue, a rate limit) is waited out and
// tried again after its Retry-After, while ctx lasts: the file stays in_progress
// meanwhile.
func (a *Admissions) Ingestion(ctx context.Context, model string) (engine.Embedder, func(), error) {
	req := &hearth.CreateResponseRequest{Model: model}
	for {
		m := &Meta{Start: time.Now(), Key: ingestionFairness, Fairness: ingestionFairness, Model: model, Log: a.log}
		adm, retry, err := a.AdmitAs(ctx, m, req, "", a.Place(ctx, "", req, ""))
		if err == nil {
			if err := adm.Wait(ctx); err != nil {
				adm.Done()
				return nil, nil, err
			}
			return adm.Embedder(), adm.Done, nil
		}
		secs, perr := strconv.Atoi(retry)
		if perr != nil {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Duration(max(secs, 1)) * time.Second):
		}
	}
}

// Enter queues the caller for a slot of model on runtime, fair across keys (or client
// addresses without auth). A refusal is a 429 whose Retry-After value it returns,
// counted in the metrics.
func (a *Admissions) Enter(m *Meta, model, runtime string) (*admission.Ticket, string, error) {
	fair := m.Fairness
	if fair == "" {
		fair = m.Key
	}
	t, err := a.control.EnterOn(model, fair, runtime)
	var rej *admission.Rejected
	if errors.As(err, &rej) {
		a.metrics.Rejected.WithLabelValues(a.label(model), rej.Reason).Inc()
		return nil, retryAfter(rej), hearth.TooManyRequests(rej.Error())
	}
	return t, "", err
}

// Wait blocks until the response may generate.
func (d *Admitted) Wait(ctx context.Context) error {
	if d == nil {
		return nil
	}
	err := d.ticket.Wait(ctx)
	d.a.metrics.QueueWait.WithLabelValues(d.model).Observe(d.ticket.Waited().Seconds())
	if rt := d.ticket.Runtime(); rt != d.placement.Runtime() {
		// Its runtime went down while it waited: admission moved it.
		d.placement.Move(rt)
	}
	return err
}

// Runtime is the label of the runtime the response runs on ("" without admission).
func (d *Admitted) Runtime() string {
	if d == nil {
		return ""
	}
	return d.placement.Runtime()
}

// Embedder is the runtimes' embedder on the runtime the request was placed on.
func (d *Admitted) Embedder() engine.Embedder {
	return d.a.pool.On(d.placement).(engine.Embedder)
}

// Done frees the slot; safe to call more than once.
func (d *Admitted) Done() {
	if d != nil {
		d.ticket.Done()
	}
}

// Queued says the request had to wait when it arrived.
func (d *Admitted) Queued() bool { return d.queued }

// Waited is how long it waited for its slot.
func (d *Admitted) Waited() time.Duration { return d.ticket.Waited() }

// retryAfter is a refusal's Retry-After header value: whole seconds, rounded up.
func retryAfter(rej *admission.Rejected) string {
	return strconv.Itoa(int((rej.RetryAfter + time.Second - 1) / time.Second))
}
