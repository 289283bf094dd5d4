// Package storetest is the conformance suite of storage.Store: the behaviour every
// store implementation must have, whatever it keeps the records in. An implementation
// runs it from its own tests with an Opener (storage/sqlite/conformance_test.go is
// one):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storage.Store { /* open t's store */ })
//	}
//
// What is particular to one implementation (its schema and migrations, its files,
// crash durability, query plans) is tested in that implementation's package. The item
// builders and Turn are exported for those tests too.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"hearth/storage"
)

// Opener opens a store for test t and closes it when the test ends (t.Cleanup). The
// first call in a test opens a new, empty store; a later call in the same test, once
// the test closed the store it had, opens the same records again, as a restarted
// hearth would (a store is durable: what it accepted survives a restart).
type Opener func(t *testing.T) storage.Store

// suite lists the conformance tests by concern; Run runs them as subtests named
// concern/test.
var suite = []struct {
	concern string
	tests   []struct {
		name string
		run  func(*testing.T, Opener)
	}
}{
	{"responses", tests(
		"GetResponseRoundTrip", testGetResponseRoundTrip,
		"CreateResponseRejects", testCreateResponseRejects,
		"StoreResponseWhole", testStoreResponseWhole,
		"ListInputItems", testListInputItems,
		"LookupItems", testLookupItems,
		"Cancel", testCancel,
		"UpdateStatus", testUpdateStatus,
		"RecoverInFlight", testRecoverInFlight,
	)},
	{"chains", tests(
		"LoadChainThreeTurns", testLoadChainThreeTurns,
		"LoadChainLinkWithoutItems", testLoadChainLinkWithoutItems,
		"DeletedLinkBreaksChain", testDeletedLinkBreaksChain,
		"ForeignOwnerSeesNothing", testForeignOwnerSeesNothing,
		"ChainEpoch", testChainEpoch,
		"LoadChainTail", testLoadChainTail,
		"CheckpointPrompt", testCheckpointPrompt,
		"CheckpointInterval", testCheckpointInterval,
	)},
	{"journal", tests(
		"Journal", testJournal,
	)},
	{"changes", tests(
		"Changes", testChanges,
	)},
	{"conversations", tests(
		"Conversations", testConversations,
	)},
	{"files", tests(
		"Files", testFiles,
	)},
	{"vectorstores", tests(
		"VectorStores", testVectorStores,
		"ExpiredVectorStores", testExpiredVectorStores,
		"VectorStoreFileProgress", testVectorStoreFileProgress,
	)},
	{"keys", tests(
		"KeyLifecycle", testKeyLifecycle,
		"KeyRoles", testKeyRoles,
		"KeyCacheGroups", testKeyCacheGroups,
		"CheckKey", testCheckKey,
		"AdoptKeyless", testAdoptKeyless,
	)},
	{"console", tests(
		"ConsoleResponses", testConsoleResponses,
		"ConsoleChain", testConsoleChain,
		"ConsoleUsage", testConsoleUsage,
		"ConsoleFilesAndVectorStores", testConsoleFilesAndVectorStores,
	)},
	{"health", tests(
		"Ping", testPing,
	)},
	{"concurrency", tests(
		"ConcurrentWriters", testConcurrentWriters,
	)},
}

// tests pairs names and test functions: name, func, name, func...
func tests(pairs ...any) []struct {
	name string
	run  func(*testing.T, Opener)
} {
	var out []struct {
		name string
		run  func(*testing.T, Opener)
	}
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, struct {
			name string
			run  func(*testing.T, Opener)
		}{pairs[i].(string), pairs[i+1].(func(*testing.T, Opener))})
	}
	return out
}

// Run runs the conformance suite against the stores open returns, one new store per
// test.
func Run(t *testing.T, open Opener) {
	for _, c := range suite {
		t.Run(c.concern, func(t *testing.T) {
			for _, tc := range c.tests {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, open) })
			}
		})
	}
}

// Owners the suite's records belong to.
var (
	alice = storage.OwnerOf("sk-alice")
	bob   = storage.OwnerOf("sk-bob")
)

// filler pads item text so that items have the size of real ones (~300 bytes of JSON).
const filler = "The quick brown fox jumps over the lazy dog while the model explains, step by step, why the test asserts exactly this order of items. "

// UserMessage, Reasoning, AssistantMessage and FunctionCall build items shaped like the
// API's, so that sizes and types in tests and benchmarks are realistic.
func UserMessage(id, text string) storage.Item {
	return NewItem(id, "message", map[string]any{
		"type": "message", "id": id, "role": "user", "status": "completed",
		"content": []any{map[string]any{"type": "input_text", "text": text}},
	})
}

func Reasoning(id, text string) storage.Item {
	return NewItem(id, "reasoning", map[string]any{
		"type": "reasoning", "id": id, "status": "completed",
		"summary": []any{},
		"content": []any{map[string]any{"type": "reasoning_text", "text": text}},
	})
}

func AssistantMessage(id, text string) storage.Item {
	return NewItem(id, "message", map[string]any{
		"type": "message", "id": id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	})
}

func FunctionCall(id, name, args string) storage.Item {
	return NewItem(id, "function_call", map[string]any{
		"type": "function_call", "id": id, "call_id": "call_" + id, "name": name,
		"arguments": args, "status": "completed",
	})
}

// NewItem builds an item of type typ whose JSON is v.
func NewItem(id, typ string, v any) storage.Item {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return storage.Item{ID: id, Type: typ, JSON: b}
}

// Text is n bytes of text starting with tag.
func Text(n int, tag string) string {
	s := tag + ": " + strings.Repeat(filler, n/len(filler)+1)
	return s[:n]
}

// Request is the stored request parameters of a response, with extra JSON fields.
func Request(model string, extra string) json.RawMessage {
	if extra != "" {
		extra = "," + extra
	}
	return json.RawMessage(fmt.Sprintf(`{"model":%q,"instructions":"Be brief."%s}`, model, extra))
}

// Body is a response object of the given id and status.
func Body(id, status string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"object":"response","status":%q,"output":[]}`, id, status))
}

// Turn creates and completes one response with the given input and output.
func Turn(t testing.TB, st storage.Responses, owner, id, prev string, input, output []storage.Item) {
	t.Helper()
	ctx := context.Background()
	err := st.CreateResponse(ctx, storage.NewResponse{
		ID: id, Owner: owner, Model: "qwen3:8b", Status: storage.StatusInProgress,
		PreviousResponseID: prev, Request: Request("qwen3:8b", ""), Body: Body(id, "in_progress"),
		Input: input,
	})
	if err != nil {
		t.Fatal(err)
	}
	err = st.CompleteResponse(ctx, id, storage.Final{
		Status: storage.StatusCompleted, Body: Body(id, "completed"),
		Usage:  storage.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 80, ReasoningTokens: 5},
		Output: output,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// IDs returns the ids of items.
func IDs(items []storage.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// LoadThroughKept loads the items of owner's chain ending at id with LoadChainTail,
// keeping checkpoints' items in kept by stamp as the server does.
func LoadThroughKept(st storage.Chains, owner string, kept map[string][]storage.Item, id string) ([]storage.Item, error) {
	var prefix []storage.Item
	c, err := st.LoadChainTail(context.Background(), owner, id, func(stamp string) bool {
		var ok bool
		prefix, ok = kept[stamp]
		return ok
	})
	if err != nil {
		return nil, err
	}
	if c.Base == nil || c.Base.Stamp == "" {
		return c.Items, nil
	}
	if c.Base.Omitted {
		if prefix == nil {
			return nil, fmt.Errorf("checkpoint %s left out, but its stamp is not kept", c.Base.ID)
		}
		return append(append([]storage.Item{}, prefix...), c.Items...), nil
	}
	kept[c.Base.Stamp] = c.Items[:c.Base.Items:c.Base.Items]
	return c.Items, nil
}

// SameChain reports whether two loads of a chain hold the same links and items.
func SameChain(a, b *storage.Chain) bool {
	if len(a.Links) != len(b.Links) || string(a.Request) != string(b.Request) || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i].ID != b.Items[i].ID || a.Items[i].Type != b.Items[i].Type || string(a.Items[i].JSON) != string(b.Items[i].JSON) {
			return false
		}
	}
	for i := range a.Links {
		la, lb := a.Links[i], b.Links[i]
		if la.ID != lb.ID || la.Model != lb.Model || la.Status != lb.Status ||
			!reflect.DeepEqual(IDs(la.Input), IDs(lb.Input)) || !reflect.DeepEqual(IDs(la.Output), IDs(lb.Output)) {
			return false
		}
	}
	return true
}
