package toolgrammar

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestCallSchema(t *testing.T) {
	weather := Tool{Name: "get_weather", Parameters: json.RawMessage(`{
		"type": "object",
		"description": "dropped",
		"properties": {
			"location": {"type": "string", "description": "City", "minLength": 1},
			"unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
			"when": {"type": "string", "format": "date-time"},
			"email": {"type": "string", "format": "email"},
			"days": {"type": "integer", "minimum": 1, "maximum": 7},
			"ratio": {"type": "number", "minimum": 0.5},
			"anything": {"description": "no type at all"}
		},
		"required": ["location"],
		"additionalProperties": false
	}`)}
	noParams := Tool{Name: "get_time"}
	withDefs := Tool{Name: "plan", Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/step"}, "minItems": 1}},
		"required": ["steps"],
		"$defs": {"step": {"type": "object", "properties": {"do": {"type": "string"}, "then": {"$ref": "#/definitions/next"}}}},
		"definitions": {"next": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
	}`)}
	recursive := Tool{Name: "tree", Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#"}}}
	}`)}

	tests := []struct {
		name     string
		format   string
		tools    []Tool
		parallel bool
		want     string
	}{
		{
			name:   "hermes one tool: name before arguments, unsupported keywords dropped",
			format: "hermes",
			tools:  []Tool{weather},
			want:   `{"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"location":{"type":"string","minLength":1},"unit":{"type":"string","enum":["c","f"]},"when":{"type":"string","format":"date-time"},"email":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},"ratio":{"type":"number"},"anything":{"type":["string","number","boolean","object","array","null"]}},"required":["location"],"additionalProperties":false}},"required":["name","arguments"]}`,
		},
		{
			name:   "several tools become anyOf; missing parameters mean any object",
			format: "qwen3",
			tools:  []Tool{noParams, {Name: "ping", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
			want:   `{"anyOf":[{"type":"object","properties":{"name":{"const":"get_time"},"arguments":{"type":"object"}},"required":["name","arguments"]},{"type":"object","properties":{"name":{"const":"ping"},"arguments":{"type":"object","properties":{}}},"required":["name","arguments"]}]}`,
		},
		{
			name:   "llama uses its own key names",
			format: "llama3",
			tools:  []Tool{noParams},
			want:   `{"type":"object","properties":{"name":{"const":"get_time"},"parameters":{"type":"object"}},"required":["name","parameters"]}`,
		},
		{
			name:   "json array formats: one call unless parallel",
			format: "command-r7b",
			tools:  []Tool{noParams},
			want:   `{"type":"array","items":{"type":"object","properties":{"tool_name":{"const":"get_time"},"parameters":{"type":"object"}},"required":["tool_name","parameters"]},"minItems":1,"maxItems":1}`,
		},
		{
			name:     "json array formats, parallel",
			format:   "mistral-v3",
			tools:    []Tool{noParams},
			parallel: true,
			want:     `{"type":"array","items":{"type":"object","properties":{"name":{"const":"get_time"},"arguments":{"type":"object"}},"required":["name","arguments"]},"minItems":1}`,
		},
		{
			name:   "$defs and definitions hoisted to the root with the tool name as prefix",
			format: "hermes",
			tools:  []Tool{withDefs},
			want:   `{"type":"object","properties":{"name":{"const":"plan"},"arguments":{"type":"object","properties":{"steps":{"type":"array","items":{"$ref":"#/$defs/plan.step"},"minItems":1}},"required":["steps"]}},"required":["name","arguments"],"$defs":{"plan.step":{"type":"object","properties":{"do":{"type":"string"},"then":{"$ref":"#/$defs/plan.next"}}},"plan.next":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
		},
		{
			name:   "a ref to the schema itself keeps the schema as a definition",
			format: "hermes",
			tools:  []Tool{recursive},
			want:   `{"type":"object","properties":{"name":{"const":"tree"},"arguments":{"$ref":"#/$defs/tree"}},"required":["name","arguments"],"$defs":{"tree":{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/tree"}}}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CallSchema(testFormat(t, tt.format), tt.tools, tt.parallel)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON: %s", got)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCallSchemaErrors(t *testing.T) {
	if _, err := CallSchema(testFormat(t, "mistral-v11"), testTools, false); err != ErrNotJSONCall {
		t.Fatalf("name-outside format: err = %v, want ErrNotJSONCall", err)
	}
	if _, err := CallSchema(testFormat(t, "hermes"), nil, false); err == nil {
		t.Fatal("no tools: want an error")
	}
	bad := Tool{Name: "x", Parameters: json.RawMessage(`{"type": "object",`)}
	if _, err := CallSchema(testFormat(t, "hermes"), []Tool{bad}, false); err == nil {
		t.Fatal("broken parameters: want an error")
	}
}

func TestNameAndArgumentsSchema(t *testing.T) {
	got, _ := NameSchema(testTools[:2])
	if want := `{"type":"string","enum":["get_weather","search"]}`; string(got) != want {
		t.Fatalf("NameSchema = %s, want %s", got, want)
	}
	got, _ = NameSchema(testTools[:1])
	if want := `{"const":"get_weather"}`; string(got) != want {
		t.Fatalf("NameSchema(one) = %s, want %s", got, want)
	}
	got, err := ArgumentsSchema(testTools[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["location"]}`; string(got) != want {
		t.Fatalf("ArgumentsSchema = %s, want %s", got, want)
	}
}

// TestConstrainedCallParses writes calls the way an engine does after a
// constrained continuation (prefix, generated JSON, suffix) and checks that
// the parser reads them back as the intended call, for every format.
func TestConstrainedCallParses(t *testing.T) {
	for _, f := range testRegistry(t).Formats() {
		t.Run(f.ID, func(t *testing.T) {
			soFar := "Some text."
			if f.Tools.Kind == Harmony {
				soFar = "<|channel|>final<|message|>Some text.<|end|>"
				if f.Tools.Channel == "" {
					soFar = " to=user<|message|>Some text.<|eom|>"
				}
			}
			var call string
			switch f.Plan() {
			case PlanCall:
				obj := `{"` + f.compiled.nameKey + `":"get_weather","` + f.compiled.argsKey + `":{"location":"Paris"}}`
				if f.Tools.Kind == JSONArray {
					obj = "[" + obj + "]"
				}
				call = f.CallPrefix(soFar) + obj + f.CallSuffix()
			case PlanNameThenArgs:
				call = f.CallPrefix(soFar) + f.ArgumentsPrefix("get_weather") + `{"location":"Paris"}` + f.CallSuffix()
			case PlanNameOnly:
				call = f.CallPrefix(soFar) + f.ArgumentsPrefix("get_weather")
				if f.Tools.Kind == PythonCall {
					call += `location="Paris")`
					if f.Tools.CallList {
						call += "]"
					}
					call += f.Tools.Close
				} else if q := f.Tools.StringDelim; q != "" {
					call += "location:" + q + "Paris" + q + "}" + f.Tools.Close
				} else if f.Tools.ValueOpen != "" {
					call += f.Tools.KeyOpen + "location" + f.Tools.KeyClose + f.Tools.ValueOpen + "Paris" + f.Tools.ValueClose + "\n" + f.Tools.Close
				} else if f.Tools.Kind == Harmony {
					call += f.Tools.KeyOpen + "location" + f.Tools.KeyClose + "Paris" + f.Tools.ValueClose + "\n" + f.Tools.FunctionClose + "\n" + f.Tools.Close
				} else {
					call += f.Tools.KeyOpen + "location" + f.Tools.KeyClose + "\nParis\n" + f.Tools.ValueClose + "\n" + f.Tools.FunctionClose + "\n" + f.Tools.Close
				}
			default:
				t.Fatalf("no plan")
			}
			evs := normalize(parseChunks(f, Options{Tools: testTools}, []string{soFar, call}))
			var ends []Event
			for _, e := range evs {
				if e.Kind == CallEnd {
					ends = append(ends, e)
				}
				if e.Kind == Malformed {
					t.Fatalf("malformed: %v in %q", e, soFar+call)
				}
			}
			if len(ends) != 1 || ends[0].Name != "get_weather" || ends[0].Text != `{"location":"Paris"}` {
				t.Fatalf("calls %v from %q", ends, soFar+call)
			}
		})
	}
}

// TestXMLArgumentsParse: JSON arguments an engine generated under
// ArgumentsSchema, written by XMLArguments after the forced name, read back as
// the same call in every XML format (a string raw, an integer typed by the
// schema), with nothing after the call's closer.
// TestArgumentsFromJSONParse: every format whose arguments are not JSON reads
// what ArgumentsFromJSON writes back as the same call (XML parameters, Gemma's
// call syntax); the other formats refuse it.
func TestArgumentsFromJSONParse(t *testing.T) {
	cases := []struct{ tool, args string }{
		{"get_weather", `{"location":"Paris, \"FR\"","unit":"celsius","days":3}`},
		{"search", `{"query":"a <b> 'c' \\ {d}","filters":{"max-results":2,"x":[1.5,true,null,"y"]},"exact":false,"tags":[]}`},
		{"get_time", `{}`},
	}
	n := 0
	for _, f := range testRegistry(t).Formats() {
		if f.Plan() != PlanNameOnly {
			if _, err := f.ArgumentsFromJSON(cases[0].args); err == nil {
				t.Errorf("%s: ArgumentsFromJSON of a format with JSON arguments", f.ID)
			}
			continue
		}
		n++
		for _, c := range cases {
			t.Run(f.ID+"/"+c.tool, func(t *testing.T) {
				written, err := f.ArgumentsFromJSON(c.args)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(written, f.Tools.Close) {
					t.Fatalf("%q does not end with the closer %q", written, f.Tools.Close)
				}
				call := f.CallPrefix("") + f.ArgumentsPrefix(c.tool) + written
				evs := normalize(parseChunks(f, Options{Tools: testTools}, []string{"Some text.", call}))
				var ends []Event
				for _, e := range evs {
					switch e.Kind {
					case CallEnd:
						ends = append(ends, e)
					case Malformed:
						t.Fatalf("malformed: %v in %q", e, call)
					}
				}
				if len(ends) != 1 || ends[0].Name != c.tool || ends[0].Text != c.args {
					t.Fatalf("calls %v from %q", ends, call)
				}
			})
		}
		if _, err := f.ArgumentsFromJSON(`["not an object"]`); err == nil {
			t.Errorf("%s: ArgumentsFromJSON of an array", f.ID)
		}
	}
	if n == 0 {
		t.Fatal("no format with non-JSON arguments in the registry")
	}
	if _, err := testFormat(t, "gemma4").XMLArguments(`{}`); err == nil {
		t.Error("gemma4: XMLArguments")
	}
	if _, err := testFormat(t, "qwen3.5").GemmaArguments(`{}`); err == nil {
		t.Error("qwen3.5: GemmaArguments")
	}
}

func TestThinkingForEffort(t *testing.T) {
	q := testFormat(t, "qwen3").Thinking.ForEffort("none")
	if q.Think == nil || *q.Think || q.UserSuffix != "/no_think" {
		t.Fatalf("qwen3 none: %+v", q)
	}
	g := testFormat(t, "gpt-oss").Thinking.ForEffort("high")
	if g.Level != "high" || g.SystemLine != "Reasoning: high" {
		t.Fatalf("gpt-oss high: %+v", g)
	}
	g = testFormat(t, "gpt-oss").Thinking.ForEffort("minimal")
	if g.Level != "low" {
		t.Fatalf("gpt-oss minimal: %+v", g)
	}
	if s := testFormat(t, "hermes").Thinking.ForEffort("high"); s.Think != nil || s.UserSuffix != "" {
		t.Fatalf("hermes has no thinking controls: %+v", s)
	}
}

// Every effort value maps onto what a family has: gpt-oss's levels (the nearest end
// for none, minimal, xhigh and max), qwen3's switch (on for all but none), the levels
// of Qwen 3.8 and Nemotron 3.5 (none is off).
func TestThinkingForEffortTable(t *testing.T) {
	for _, tc := range []struct {
		family, effort, level, system, suffix string
		think                                 bool
	}{
		{"gpt-oss", "none", "low", "Reasoning: low", "", false},
		{"gpt-oss", "minimal", "low", "Reasoning: low", "", true},
		{"gpt-oss", "low", "low", "Reasoning: low", "", true},
		{"gpt-oss", "medium", "medium", "Reasoning: medium", "", true},
		{"gpt-oss", "high", "high", "Reasoning: high", "", true},
		{"gpt-oss", "xhigh", "high", "Reasoning: high", "", true},
		{"gpt-oss", "max", "high", "Reasoning: high", "", true},
		{"qwen3", "none", "", "", "/no_think", false},
		{"qwen3", "minimal", "", "", "/think", true},
		{"qwen3", "xhigh", "", "", "/think", true},
		{"qwen3", "max", "", "", "/think", true},
		// Levels of families that can stop reasoning: none is think=false.
		{"qwen3.8", "none", "", "", "", false},
		{"qwen3.8", "minimal", "low", "", "", true},
		{"qwen3.8", "low", "low", "", "", true},
		{"qwen3.8", "medium", "medium", "", "", true},
		{"qwen3.8", "xhigh", "high", "", "", true},
		{"nemotron-3.5-nano", "none", "", "", "", false},
		{"nemotron-3.5-nano", "medium", "medium", "", "", true},
		{"nemotron-3.5-nano", "max", "high", "", "", true},
		// Glimmer's reasoning strength has "none": none and minimal turn it off.
		{"glimmer", "none", "none", "", "", false},
		{"glimmer", "minimal", "none", "", "", true},
		{"glimmer", "low", "low", "", "", true},
		{"glimmer", "max", "high", "", "", true},
		{"cohere", "none", "", "", "", false},
		{"cohere", "high", "", "", "", true},
	} {
		s := testFormat(t, tc.family).Thinking.ForEffort(tc.effort)
		if s.Level != tc.level || s.SystemLine != tc.system || s.UserSuffix != tc.suffix || s.Think == nil || *s.Think != tc.think {
			t.Errorf("%s %s: %+v", tc.family, tc.effort, s)
		}
	}
}

// TestPythonCallPrefix: a call constrained inside an envelope the model opened (a
// later call of <function_calls>, or a retry of its first) needs only its name; outside
// one, the opener.
func TestPythonCallPrefix(t *testing.T) {
	for _, c := range []struct{ format, soFar, want string }{
		{"olmo3", "", "<function_calls>"},
		{"olmo3", "Text.", "<function_calls>"},
		{"olmo3", "<function_calls>", ""},
		{"olmo3", "<function_calls>a(x=1)\n", ""},
		{"olmo3", "<function_calls>a(x=1)", "\n"},
		{"olmo3", "<function_calls>a()</function_calls>", "<function_calls>"},
		{"lfm2", "Text.", "<|tool_call_start|>["},
		{"lfm2", "<|tool_call_start|>", "["},
		{"lfm2", "<|tool_call_start|>[", ""},
		{"lfm2", "<|tool_call_start|>[a(x=1)", ","},
		{"lfm2", "<|tool_call_start|>[a(x=1),", ""},
		{"lfm2", "<|tool_call_start|>[a(x=1)]<|tool_call_end|>", "<|tool_call_start|>["},
	} {
		if got := testFormat(t, c.format).CallPrefix(c.soFar); got != c.want {
			t.Errorf("%s: CallPrefix(%q) = %q, want %q", c.format, c.soFar, got, c.want)
		}
	}
	f := testFormat(t, "olmo3")
	// A later call of the envelope, constrained: name, arguments, closer.
	written, err := f.ArgumentsFromJSON(`{"timezone":"UTC"}`)
	if err != nil {
		t.Fatal(err)
	}
	out := "<function_calls>get_weather(location=\"Paris\")\n" + f.CallPrefix("<function_calls>get_weather(location=\"Paris\")\n") +
		f.ArgumentsPrefix("get_time") + written
	var calls []string
	for _, e := range normalize(parseChunks(f, Options{Tools: testTools}, []string{out})) {
		if e.Kind == CallEnd {
			calls = append(calls, e.Name+e.Text)
		}
		if e.Kind == Malformed {
			t.Fatalf("malformed %v in %q", e, out)
		}
	}
	if fmt.Sprint(calls) != `[get_weather{"location":"Paris"} get_time{"timezone":"UTC"}]` {
		t.Fatalf("calls %v from %q", calls, out)
	}
}

// TestHarmonyRecipientAt: where an engine cuts a harmony call back to write a name of its
// own, and what it writes before the name: after gpt-oss's "to=functions.", after
// Glimmer's "to=" (whatever the header addressed), and for a Glimmer block under a
// header that named no one, after the role, with " to=" to write. Each cut, completed
// with the prefix, a name and ArgumentsPrefix and the block, reads back as that call.
func TestHarmonyRecipientAt(t *testing.T) {
	block := "<atem:function_calls>\n<atem:invoke name=\"search\">\n"
	for _, c := range []struct {
		format, out string
		at          int
		prefix      string
	}{
		{"gpt-oss", "<|channel|>commentary to=functions.search <|constrain|>json<|message|>", len("<|channel|>commentary to=functions."), ""},
		{"gpt-oss", "<|channel|>final<|message|>Hi.<|end|><|start|>assistant<|channel|>commentary<|message|>", -1, ""},
		{"glimmer", " to=search<|message|>" + block, len(" to="), ""},
		{"glimmer", " to=self<|message|>Hm.<|eom|><|start|>assistant to=user<|message|>" + block,
			len(" to=self<|message|>Hm.<|eom|><|start|>assistant to="), ""},
		{"glimmer", " to=self<|message|>Hm.<|eom|><|start|>assistant<|message|>" + block,
			len(" to=self<|message|>Hm.<|eom|><|start|>assistant"), " to="},
		{"glimmer", "<|message|>" + block, 0, " to="},
	} {
		f := testFormat(t, c.format)
		at, prefix := f.RecipientAt(c.out)
		if at != c.at || prefix != c.prefix {
			t.Errorf("%s: RecipientAt(%q) = %d, %q; want %d, %q", c.format, c.out, at, prefix, c.at, c.prefix)
			continue
		}
		if c.format != "glimmer" {
			continue
		}
		written, err := f.ArgumentsFromJSON(`{"timezone":"UTC"}`)
		if err != nil {
			t.Fatal(err)
		}
		out := c.out[:at] + prefix + "get_time" + f.ArgumentsPrefix("get_time")[len("get_time"):] + written
		var calls []string
		for _, e := range normalize(parseChunks(f, Options{Tools: testTools}, []string{out})) {
			switch e.Kind {
			case CallEnd:
				calls = append(calls, e.Name+e.Text)
			case Malformed:
				t.Fatalf("malformed %v in %q", e, out)
			}
		}
		if fmt.Sprint(calls) != `[get_time{"timezone":"UTC"}]` {
			t.Errorf("calls %v from %q", calls, out)
		}
	}
	// Glimmer's CallPrefix: the prompt opened the header; after a message, a new one.
	f := testFormat(t, "glimmer")
	for soFar, want := range map[string]string{"": " to=", "x<|eom|>": "<|start|>assistant to=", "x<|eom|><|start|>assistant": " to="} {
		if got := f.CallPrefix(soFar); got != want {
			t.Errorf("glimmer: CallPrefix(%q) = %q, want %q", soFar, got, want)
		}
	}
}

// A property an object schema requires but does not describe is generated as any
// value; without that, no constrained call could satisfy the schema. Under
// additionalProperties false it stays undescribed (the engine refuses such a tool).
func TestArgumentsSchemaDescribesRequired(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`{"type":"object","required":["city"]}`,
			`{"type":"object","required":["city"],"properties":{"city":` + anyJSON + `}}`},
		{`{"type":"object","properties":{"unit":{"type":"string"}},"required":["city","unit","city"]}`,
			`{"type":"object","properties":{"unit":{"type":"string"},"city":` + anyJSON + `},"required":["city","unit","city"]}`},
		{`{"type":"object","properties":{"where":{"type":"object","required":["city"]}}}`,
			`{"type":"object","properties":{"where":{"type":"object","required":["city"],"properties":{"city":` + anyJSON + `}}}}`},
		{`{"type":"object","required":["city"],"additionalProperties":false}`,
			`{"type":"object","required":["city"],"additionalProperties":false}`},
	} {
		got, err := ArgumentsSchema(Tool{Name: "t", Parameters: []byte(c.params)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("ArgumentsSchema(%s)\n got %s\nwant %s", c.params, got, c.want)
		}
	}
}

const anyJSON = `{"type":["string","number","boolean","object","array","null"]}`

// TestArgumentsSchemaLeavesLongBoundsOpen: an upper length bound above what the
// runtime's grammar parser accepts as a repetition is left out of the grammar's schema
// (the client's schema still checks the call); bounds within it, and lower bounds,
// stay.
func TestArgumentsSchemaLeavesLongBoundsOpen(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`{"type":"object","properties":{"script":{"type":"string","maxLength":524288}}}`,
			`{"type":"object","properties":{"script":{"type":"string"}}}`},
		{`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"},"maxItems":2001}}}`,
			`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"}}}}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":2000}}}`,
			`{"type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":2000}}}`},
		{`{"type":"object","properties":{"s":{"type":"string","maxLength":1e6}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`},
	} {
		got, err := ArgumentsSchema(Tool{Name: "t", Parameters: []byte(c.params)})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("ArgumentsSchema(%s)\n got %s\nwant %s", c.params, got, c.want)
		}
	}
}
