package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"hearth/engine/ollama"
	"hearth/engine/pool"
	"hearth/internal/admission"
	"hearth/server"
)

// Ollama's runtime is a pool member, and its own API is passed through under /api.
var (
	_ pool.Runtime       = (*ollama.Runtime)(nil)
	_ server.Passthrough = (*ollama.Runtime)(nil)
)

// runtimeSpec is one --runtime value: "embedded" or an Ollama URL, with ?slots=N.
type runtimeSpec struct {
	embedded bool
	url      string
	// slots is the runtime's parallel slots when the value sets them, else 0.
	slots int
	// source names where the value came from, for errors.
	source string
}

// parseRuntimeSpec reads a --runtime value.
func parseRuntimeSpec(raw, source string) (runtimeSpec, error) {
	spec := runtimeSpec{source: source}
	raw = strings.TrimSpace(raw)
	base, query, _ := strings.Cut(raw, "?")
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return spec, fmt.Errorf("%s %q: %w", source, raw, err)
		}
		for k, v := range q {
			if k != "slots" {
				return spec, fmt.Errorf("%s %q: unknown setting %q (want slots=N)", source, raw, k)
			}
			n, err := strconv.Atoi(v[len(v)-1])
			if err != nil || n < 1 {
				return spec, fmt.Errorf("%s %q: slots must be a whole number of at least 1", source, raw)
			}
			spec.slots = n
		}
	}
	if strings.EqualFold(base, "embedded") {
		spec.embedded = true
		return spec, nil
	}
	if _, err := ollama.ParseURL(base); err != nil {
		return spec, fmt.Errorf("%s: %w (want embedded or an Ollama URL)", source, err)
	}
	spec.url = base
	return spec, nil
}

// runtimeSpecs are the runtimes to serve from: --runtime values, then --ollama's; with
// neither, OLLAMA_HOST when it is set (as ollama's own CLI reads it), else embedded.
func runtimeSpecs(o serveOptions) ([]runtimeSpec, error) {
	var specs []runtimeSpec
	for _, r := range o.runtimes {
		if strings.TrimSpace(r) == "" {
			continue
		}
		s, err := parseRuntimeSpec(r, "--runtime")
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if o.ollamaURL != "" {
		s, err := parseRuntimeSpec(o.ollamaURL, "--ollama")
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		if host := os.Getenv("OLLAMA_HOST"); host != "" {
			return []runtimeSpec{{url: host, source: "OLLAMA_HOST"}}, nil
		}
		return []runtimeSpec{{embedded: true, source: "default"}}, nil
	}
	embedded := 0
	for _, s := range specs {
		if s.embedded {
			embedded++
		}
	}
	if embedded > 1 {
		return nil, errors.New("--runtime: embedded is given more than once (one process runs one embedded runtime)")
	}
	return specs, nil
}

// openedRuntimes are the runtimes hearth serves from, in order.
type openedRuntimes struct {
	specs []runtimeSpec
	rts   []*ollama.Runtime
	// embedded is the embedded runtime among them, nil if none.
	embedded *ollama.Runtime
}

// openRuntimes starts the embedded runtime and connects to the external ones named.
func openRuntimes(ctx context.Context, settings *serveSettings, o serveOptions, log *slog.Logger) (*openedRuntimes, error) {
	out := &openedRuntimes{specs: settings.runtimes}
	for _, s := range settings.runtimes {
		var rt *ollama.Runtime
		var err error
		if s.embedded {
			rt, err = startEmbedded(ctx, o, settings.modelsDir, log)
			out.embedded = rt
		} else {
			rt, err = connectExternal(ctx, s.url, s.source, log)
		}
		if err != nil {
			return nil, err
		}
		out.rts = append(out.rts, rt)
	}
	return out, nil
}

// pool serves the runtimes as one, with admission's slots per runtime: each runtime's
// ?slots=, else --max-concurrent, else OLLAMA_NUM_PARALLEL (or 1).
func (r *openedRuntimes) pool(o serveOptions, log *slog.Logger) (*pool.Pool, admission.Config, error) {
	members := make([]pool.Runtime, len(r.rts))
	adm := admission.Config{Slots: cmp.Or(o.maxConcurrent, r.rts[0].Slots()), RuntimeSlots: map[string]int{}}
	for i, rt := range r.rts {
		members[i] = rt
		if n := r.specs[i].slots; n > 0 {
			adm.RuntimeSlots[rt.Label()] = n
		}
	}
	p, err := pool.New(members, log)
	if err != nil {
		return nil, adm, fmt.Errorf("--runtime: %w", err)
	}
	if len(members) > 1 {
		log.Info("serving several runtimes as one", "runtimes", strings.Join(p.Labels(), ","))
	}
	return p, adm, nil
}

// stopped is closed when the embedded runtime stops; nil (never) without one.
func (r *openedRuntimes) stopped() <-chan struct{} {
	if r.embedded == nil {
		return nil
	}
	return r.embedded.Stopped()
}
