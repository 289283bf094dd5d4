package ollama

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// crashingSchema takes llama.cpp's conversion into endless recursion (an allOf
// member whose $ref leads to itself): a SIGSEGV in whatever process converts it.
// schemaguard refuses it; these tests hand it to the checker directly, as a schema
// schemaguard missed would reach it.
const crashingSchema = `{"allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"$ref":"#/$defs/x"}}}`

// TestGrammarCheckChildContainsACrash: the conversion crashing ends only the child;
// the check answers a refusal, and the next check runs in a new child.
func TestGrammarCheckChildContainsACrash(t *testing.T) {
	c := newGrammarChecker()
	ctx := context.Background()
	if err := c.check(ctx, []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)); err != nil {
		t.Fatalf("usable schema: %v", err)
	}
	c.mu.Lock()
	inProcess, idle := c.inProcess, len(c.idle)
	c.mu.Unlock()
	if inProcess || idle != 1 {
		t.Fatalf("inProcess=%v idle=%d: the check did not run in a child", inProcess, idle)
	}
	if err := c.check(ctx, []byte(crashingSchema)); !errors.Is(err, errConversionCrashed) {
		t.Fatalf("crashing schema: %v, want errConversionCrashed", err)
	}
	if err := c.check(ctx, []byte(`{"type":"bogus"}`)); err == nil || !strings.Contains(err.Error(), "rejects") {
		t.Fatalf("after the crash: %v, want the conversion's refusal", err)
	}
}

// slowSchema has n distinct $refs: the conversion copies the whole schema for each,
// so a few thousand cost seconds to minutes of CPU (schemaguard allows 256).
func slowSchema(n int) []byte {
	var props, defs []string
	for i := range n {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/d%d"}`, i, i))
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"v%d":{"type":"string"}}}`, i, i))
	}
	return []byte(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"$defs":{` + strings.Join(defs, ",") + `}}`)
}

// TestGrammarCheckStopsWhenTheClientLeaves: a check whose context ends returns at
// once and its child is killed, not left converting.
func TestGrammarCheckStopsWhenTheClientLeaves(t *testing.T) {
	c := newGrammarChecker()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.check(ctx, slowSchema(4000))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("check = %v after %s, want the context's end", err, time.Since(start))
	}
	c.mu.Lock()
	idle := len(c.idle)
	c.mu.Unlock()
	if idle != 0 {
		t.Fatalf("%d idle children: the one converting was kept", idle)
	}
	// The slots are free again: a usable schema checks at once.
	if err := c.check(context.Background(), []byte(`{"type":"string"}`)); err != nil {
		t.Fatal(err)
	}
}

// FuzzSchemaToGrammar runs what schemaguard accepts through the C++ conversion and
// the grammar parser in this process: a schema that crashes them crashes the fuzz
// run. The seeds in testdata/fuzz/FuzzSchemaToGrammar are schemas that crashed
// hearth before schemaguard, and shapes near them.
func FuzzSchemaToGrammar(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$"}},"required":["a"]}`,
		`{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"allOf":[{"$ref":"#/$defs/base"},{"properties":{"b":{"type":"string"}}}],"$defs":{"base":{"properties":{"a":{"type":"integer"}}}}}`,
		`{"type":"integer","minimum":-5,"maximum":1000}`,
		`{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"null"}]},"minItems":1,"maxItems":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		if checkGuard(schema) != nil {
			return
		}
		convertInProcess(schema)
	})
}
