package record

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"hearth/storage"
)

func TestPackRoundTrip(t *testing.T) {
	items := []storage.Item{
		{ID: "msg_1", Type: "message", JSON: []byte(`{"type":"message","content":"` + strings.Repeat("é", 300) + `"}`)},
		{ID: "", Type: "reasoning", JSON: []byte(`{}`)},
		{ID: "fc_1", Type: "function_call", JSON: []byte(`{"arguments":"{}"}`)},
	}
	for _, in := range [][]storage.Item{nil, items} {
		got, err := UnpackItems(nil, PackItems(in), map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(in) {
			t.Fatalf("%d items back, want %d", len(got), len(in))
		}
		for i := range in {
			if got[i].ID != in[i].ID || got[i].Type != in[i].Type || string(got[i].JSON) != string(in[i].JSON) {
				t.Errorf("item %d: %+v, want %+v", i, got[i], in[i])
			}
		}
	}
	p := PackItems(items)
	for cut := range len(p) {
		if _, err := UnpackItems(nil, p[:cut], map[string]string{}); err == nil {
			t.Fatalf("pack cut at %d of %d bytes decoded", cut, len(p))
		}
	}
	if _, err := UnpackItems(nil, append(p, 0), map[string]string{}); err == nil {
		t.Error("pack with a trailing byte decoded")
	}
	if _, err := UnpackItems(nil, []byte{9}, map[string]string{}); err == nil {
		t.Error("unknown pack version accepted")
	}
}

// TestPackBytes pins the layout: every store writes these bytes, and databases hold them.
func TestPackBytes(t *testing.T) {
	got := PackItems([]storage.Item{{ID: "a", Type: "message", JSON: []byte(`{}`)}})
	want := []byte("\x01\x01\x01a\x07message\x02{}")
	if !bytes.Equal(got, want) {
		t.Errorf("pack %q, want %q", got, want)
	}
	events, err := PackEvents([]storage.Event{{Seq: 3, Type: "response.created", Data: json.RawMessage(`{"a":1}`)}}, 3)
	if err != nil || string(events) != "response.created {\"a\":1}\n" {
		t.Errorf("events %q (%v)", events, err)
	}
}

func TestChainRoundTrip(t *testing.T) {
	in := []storage.Item{{ID: "in1", Type: "message", JSON: []byte(`{"x":1}`)}}
	out := []storage.Item{{ID: "out1", Type: "message", JSON: []byte(`{"y":2}`)}, {ID: "fc", Type: "function_call", JSON: []byte(`{}`)}}
	c := &storage.Chain{Links: []storage.Link{
		{ID: "resp_1", Model: "m", Status: storage.Status("completed"), Input: in, Output: out},
		{ID: "resp_2", Model: "m", Status: storage.Status("completed"), Input: out[:1]},
	}}
	blob := EncodeChain(c)
	got, err := DecodeChain(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Links) != 2 || len(got.Items) != 4 || got.Links[0].ID != "resp_1" || got.Links[1].ID != "resp_2" ||
		len(got.Links[0].Output) != 2 || got.Links[0].Output[1].ID != "fc" || len(got.Links[1].Input) != 1 || len(got.Links[1].Output) != 0 {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := DecodeChain(blob[:len(blob)-1]); err == nil {
		t.Error("checkpoint cut short decoded")
	}
	if _, err := DecodeChain([]byte{1}); err == nil {
		t.Error("checkpoint without links decoded")
	}
}

func TestEventsRoundTrip(t *testing.T) {
	in := []storage.Event{{Seq: 5, Type: "a", Data: json.RawMessage(`{"n":1}`)}, {Seq: 6, Type: "b", Data: json.RawMessage(`{}`)}}
	data, err := PackEvents(in, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnpackEvents(nil, data, 5, 5)
	if err != nil || len(got) != 1 || got[0].Seq != 6 || got[0].Type != "b" || string(got[0].Data) != `{}` {
		t.Fatalf("events after 5: %+v (%v)", got, err)
	}
	if _, err := PackEvents(in, 4); err == nil {
		t.Error("a batch after a gap packed")
	}
	if _, err := PackEvents([]storage.Event{{Seq: 0, Type: "a b", Data: json.RawMessage(`{}`)}}, 0); err == nil {
		t.Error("a type with a space packed")
	}
	if _, err := UnpackEvents(nil, []byte("nospace\n"), 0, -1); err == nil {
		t.Error("a damaged line unpacked")
	}
}
