package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"hearth/server"
)

// sample is what one streamed request measured.
type sample struct {
	// TTFT is the time from sending the request to the first generated text (a text,
	// reasoning or arguments delta; for the raw runtime, the first non-empty chunk).
	TTFT time.Duration
	// Total is the time from sending the request to the end of the stream.
	Total time.Duration
	// OutputTokens is what the server reported (the runtime's eval_count).
	OutputTokens int
	// InputTokens and CachedTokens are a /v1/responses usage's (zero for the raw
	// runtime, which does not say what it found in its cache).
	InputTokens, CachedTokens int
	// Text is the generated text (deltas of messages, or raw text).
	Text string
	// Calls are the function calls in the output, in order: the name, a space and the
	// arguments.
	Calls []string
	// ResponseID is the id of a /v1/responses response.
	ResponseID string
	// Status is the terminal status (completed, ...), or the raw done_reason.
	Status string
	// Runtime is the runtime hearth says served the response (its x-hearth-runtime
	// header); empty from the other systems.
	Runtime string
}

// decodeRate is output tokens per second after the first token.
func (s sample) decodeRate() float64 {
	d := (s.Total - s.TTFT).Seconds()
	if d <= 0 || s.OutputTokens < 2 {
		return 0
	}
	return float64(s.OutputTokens-1) / d
}

// postJSON posts req as JSON and returns the response when its status is 200; the
// caller reads and closes its body.
func postJSON(ctx context.Context, hc *http.Client, url string, req map[string]any) (*http.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hreq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	return resp, nil
}

// rawGenerate streams POST /api/generate with raw: true and measures it.
func rawGenerate(ctx context.Context, hc *http.Client, base string, req map[string]any) (sample, error) {
	start := time.Now()
	resp, err := postJSON(ctx, hc, base+"/api/generate", req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	var s sample
	var text strings.Builder
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var chunk struct {
				Response   string `json:"response"`
				Done       bool   `json:"done"`
				DoneReason string `json:"done_reason"`
				EvalCount  int    `json:"eval_count"`
				Error      string `json:"error"`
			}
			if jerr := json.Unmarshal(line, &chunk); jerr != nil {
				return s, fmt.Errorf("/api/generate chunk: %w", jerr)
			}
			if chunk.Error != "" {
				return s, fmt.Errorf("/api/generate: %s", chunk.Error)
			}
			if chunk.Response != "" && s.TTFT == 0 {
				s.TTFT = time.Since(start)
			}
			text.WriteString(chunk.Response)
			if chunk.Done {
				s.Status, s.OutputTokens = chunk.DoneReason, chunk.EvalCount
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
	}
	s.Total = time.Since(start)
	s.Text = text.String()
	if s.Status == "" {
		return s, fmt.Errorf("/api/generate ended without a done chunk")
	}
	return s, nil
}

// responsesStream streams POST <base>/v1/responses (stream: true) and measures it. It
// reads both hearth's stream and the runtime's own, which has no [DONE].
func responsesStream(ctx context.Context, hc *http.Client, base string, req map[string]any) (sample, error) {
	req["stream"] = true
	start := time.Now()
	resp, err := postJSON(ctx, hc, base+"/v1/responses", req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	s := sample{Runtime: resp.Header.Get(server.HeaderRuntime)}
	var text strings.Builder
	var errMsg string
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: ")); ok && !bytes.Equal(data, []byte("[DONE]")) {
			var ev struct {
				Type     string          `json:"type"`
				Delta    string          `json:"delta"`
				Response json.RawMessage `json:"response"`
				Error    *struct {
					Message string `json:"message"`
				} `json:"error"`
				Message string `json:"message"`
			}
			if jerr := json.Unmarshal(data, &ev); jerr != nil {
				return s, fmt.Errorf("event: %w: %.200s", jerr, data)
			}
			switch {
			case strings.HasSuffix(ev.Type, ".delta"):
				if s.TTFT == 0 {
					s.TTFT = time.Since(start)
				}
				if ev.Type == "response.output_text.delta" {
					text.WriteString(ev.Delta)
				}
			case ev.Type == "error":
				errMsg = ev.Message
				if ev.Error != nil {
					errMsg = ev.Error.Message
				}
			case ev.Type == "response.completed" || ev.Type == "response.incomplete" || ev.Type == "response.failed":
				var final struct {
					ID     string `json:"id"`
					Status string `json:"status"`
					Usage  *struct {
						InputTokens        int `json:"input_tokens"`
						OutputTokens       int `json:"output_tokens"`
						InputTokensDetails struct {
							CachedTokens int `json:"cached_tokens"`
						} `json:"input_tokens_details"`
					} `json:"usage"`
					Output []struct {
						Type      string `json:"type"`
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"output"`
				}
				if jerr := json.Unmarshal(ev.Response, &final); jerr != nil {
					return s, fmt.Errorf("%s: %w", ev.Type, jerr)
				}
				s.ResponseID, s.Status = final.ID, final.Status
				if final.Usage != nil {
					s.OutputTokens = final.Usage.OutputTokens
					s.InputTokens, s.CachedTokens = final.Usage.InputTokens, final.Usage.InputTokensDetails.CachedTokens
				}
				for _, it := range final.Output {
					if it.Type == "function_call" {
						s.Calls = append(s.Calls, it.Name+" "+it.Arguments)
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
	}
	s.Total = time.Since(start)
	s.Text = text.String()
	switch {
	case s.Status == "":
		return s, fmt.Errorf("%s/v1/responses: stream ended without a terminal event", base)
	case s.Status == "failed":
		return s, fmt.Errorf("%s/v1/responses: response failed: %s", base, errMsg)
	}
	return s, nil
}
