package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hearth/storage"
)

func openTestDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "data", "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// filler pads item text so that items have the size of real ones (~300 bytes of JSON).
const filler = "The quick brown fox jumps over the lazy dog while the model explains, step by step, why the test asserts exactly this order of items. "

// userMessage, reasoning, assistantMessage and functionCall build items shaped like the
// API's, so that sizes and types in tests and benchmarks are realistic.
func userMessage(id, text string) storage.Item {
	return mkItem(id, "message", map[string]any{
		"type": "message", "id": id, "role": "user", "status": "completed",
		"content": []any{map[string]any{"type": "input_text", "text": text}},
	})
}

func reasoning(id, text string) storage.Item {
	return mkItem(id, "reasoning", map[string]any{
		"type": "reasoning", "id": id, "status": "completed",
		"summary": []any{},
		"content": []any{map[string]any{"type": "reasoning_text", "text": text}},
	})
}

func assistantMessage(id, text string) storage.Item {
	return mkItem(id, "message", map[string]any{
		"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	})
}

func functionCall(id, name, args string) storage.Item {
	return mkItem(id, "function_call", map[string]any{
		"type": "function_call", "id": id, "call_id": "call_" + id, "name": name,
		"arguments": args, "status": "completed",
	})
}

func mkItem(id, typ string, v any) storage.Item {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return storage.Item{ID: id, Type: typ, JSON: b}
}

func text(n int, tag string) string {
	s := tag + ": " + strings.Repeat(filler, n/len(filler)+1)
	return s[:n]
}

func request(model string, extra string) json.RawMessage {
	if extra != "" {
		extra = "," + extra
	}
	return json.RawMessage(fmt.Sprintf(`{"model":%q,"instructions":"Be brief."%s}`, model, extra))
}

func body(id, status string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"object":"response","status":%q,"output":[]}`, id, status))
}

// turn creates and completes one response with the given input and output.
func turn(t testing.TB, db *DB, owner, id, prev string, input, output []storage.Item) {
	t.Helper()
	ctx := context.Background()
	err := db.CreateResponse(ctx, storage.NewResponse{
		ID: id, Owner: owner, Model: "qwen3:8b", Status: storage.StatusInProgress,
		PreviousResponseID: prev, Request: request("qwen3:8b", ""), Body: body(id, "in_progress"),
		Input: input,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.CompleteResponse(ctx, id, storage.Final{
		Status: storage.StatusCompleted, Body: body(id, "completed"),
		Usage:  storage.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 80, ReasoningTokens: 5},
		Output: output,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ids(items []storage.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}
