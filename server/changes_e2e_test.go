package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/storage"
)

// TestFollowStoredE2E: a stream of a response that no run of this server holds (as
// when another replica runs it) follows its journal in the store, woken by the store's
// changes and not by polling: each batch the store takes reaches the client, and the
// stream ends with the response's end. On SQLite the store tells its own writes; the
// server's waiter is the same for PostgreSQL, where they come from other replicas.
func TestFollowStoredE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	who := storage.OwnerOf("")
	const id = "resp_elsewhere"
	body := func(status string) json.RawMessage {
		return json.RawMessage(`{"id":"` + id + `","object":"response","status":"` + status + `","output":[]}`)
	}
	event := func(seq int, typ string) storage.Event {
		return storage.Event{Seq: seq, Type: typ, Data: []byte(fmt.Sprintf(`{"type":%q,"sequence_number":%d}`, typ, seq))}
	}
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: who, Model: "m", Status: storage.StatusInProgress,
		Background: true, Request: json.RawMessage(`{"model":"m"}`), Body: body("in_progress")}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, id, []storage.Event{event(0, "response.created"), event(1, "response.in_progress")}, false); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(srv.URL + "/v1/responses/" + id + "?stream=true&starting_after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	types := make(chan string, 16)
	go func() {
		defer close(types)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e struct{ Type string }
				json.Unmarshal([]byte(data), &e)
				if data == "[DONE]" {
					e.Type = "[DONE]"
				}
				types <- e.Type
			}
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-types:
			if got != want {
				t.Fatalf("next event %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s within 5 s", want)
		}
	}
	next("response.in_progress") // what the journal had after event 0
	for seq := 2; seq < 5; seq++ {
		if err := db.AppendEvents(ctx, id, []storage.Event{event(seq, "response.output_text.delta")}, false); err != nil {
			t.Fatal(err)
		}
		next("response.output_text.delta")
	}
	if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: body("completed"),
		Events: []storage.Event{event(5, "response.completed")}, EndJournal: true}); err != nil {
		t.Fatal(err)
	}
	next("response.completed")
	next("[DONE]")
}
