package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"hearth/storage"
)

// PackEvents lays out a journal batch row's data, events numbered from next without a
// gap: one line each, "<type> <JSON>\n". A type or JSON that would break the lines is
// an error, as is an event out of sequence.
func PackEvents(events []storage.Event, next int) ([]byte, error) {
	size := 0
	for i, e := range events {
		if e.Seq != next+i {
			return nil, fmt.Errorf("event %d where %d comes next", e.Seq, next+i)
		}
		if e.Type == "" || strings.ContainsAny(e.Type, " \n") || bytes.IndexByte(e.Data, '\n') >= 0 {
			return nil, fmt.Errorf("event %d: a type or JSON with a space or line break cannot be journaled", e.Seq)
		}
		size += len(e.Type) + len(e.Data) + 2
	}
	data := make([]byte, 0, size)
	for _, e := range events {
		data = append(data, e.Type...)
		data = append(data, ' ')
		data = append(data, e.Data...)
		data = append(data, '\n')
	}
	return data, nil
}

// UnpackEvents appends to dst the events of one batch row's data whose first event is
// number first, leaving out those numbered after or lower. Event data is sliced out of
// data (not copied).
func UnpackEvents(dst []storage.Event, data []byte, first, after int) ([]storage.Event, error) {
	seq := first
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		typ, js, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			return dst, fmt.Errorf("event %d is damaged", seq)
		}
		if seq > after {
			dst = append(dst, storage.Event{Seq: seq, Type: string(typ), Data: json.RawMessage(js)})
		}
		seq++
		data = rest
	}
	return dst, nil
}
