package engine

import (
	"context"
	"errors"

	"hearth"
)

// Server-side compaction (context_management): a request that asks for it and whose
// rendered input would exceed its compact_threshold (or the model's window) has its
// conversation compacted first, as POST /v1/responses/compact would compact it
// (compact.go), within the response: the summarising generation runs when the
// response starts, its compaction item is the response's first output item, and the
// model then answers from the compacted window. Later turns go on from that item
// (cutAtCompaction), whether they continue the chain, a conversation, or resend the
// output as input.

// pendingCompaction is a compaction a job runs before its own generation.
type pendingCompaction struct {
	cp      *Compaction
	history []hearth.Item // the chain the request continues, as given to Prepare
}

// compactFirst decides whether the job of a request that asks for compaction must
// compact first, given what preparing it as it is gave (j, or err). It compacts when
// the prompt has more tokens than the threshold, or does not fit the window at all;
// a conversation with nothing compaction would replace goes on as it is.
func (e *Engine) compactFirst(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item,
	cm hearth.ContextManagement, j *Job, err error) (*Job, error) {
	var herr *hearth.Error
	if err != nil && !(errors.As(err, &herr) && herr.Code == hearth.CodeContextLengthExceeded) {
		return nil, err
	}
	if err == nil {
		over, cerr := j.overThreshold(ctx, cm.CompactThreshold)
		if cerr != nil || !over {
			return j, cerr
		}
	}
	cp, cerr := e.PrepareCompaction(ctx, req, history)
	if cerr != nil {
		if errors.As(cerr, &herr) && herr.Code == CodeNothingToCompact {
			return j, err
		}
		return nil, cerr
	}
	if j == nil {
		// The input does not fit as it is: the job is prepared again, from the
		// compacted window, when it runs.
		m, merr := e.Model(ctx, req.Model)
		if merr != nil {
			return nil, merr
		}
		j = &Job{e: e, Model: m, req: req, caller: callerFrom(ctx)}
	}
	j.compaction = &pendingCompaction{cp: cp, history: history}
	return j, nil
}

// overThreshold reports whether the job's prompt has more tokens than threshold (nil:
// no threshold, only the window counts). A prompt whose bytes bound its tokens below
// the threshold needs no runtime call; otherwise the runtime counts, as fitWindow
// does, and the counted prompt stays in its cache for the generation.
func (j *Job) overThreshold(ctx context.Context, threshold *int) (bool, error) {
	if threshold == nil {
		return false, nil
	}
	if len(j.gen.Images) == 0 && len(j.Prompt)+2 <= *threshold {
		return false, nil
	}
	f := &promptFit{e: j.e, gen: j.gen, window: j.window}
	n, tooLong, err := f.count(ctx, j.Prompt, j.gen.Images)
	if err != nil {
		return false, err
	}
	return tooLong || n > *threshold, nil
}

// runCompaction generates the pending compaction's summary, reports its item (and the
// usage of its generation) to b, and prepares the job that answers from the
// compacted window. When it fails, the response has ended (failed, or incomplete
// when the client left) and the error is for logging.
func (j *Job) runCompaction(ctx context.Context, b *hearth.Builder, pc *pendingCompaction) (*Job, error) {
	window, usage, err := pc.cp.Run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			b.Incomplete(IncompleteClientDisconnected, usage)
			return nil, err
		}
		var herr *hearth.Error
		if !errors.As(err, &herr) {
			herr = hearth.ServerError(err.Error())
		}
		b.Fail(herr, &usage)
		return nil, err
	}
	item := window[len(window)-1]
	if err := b.AddCompaction(item, usage); err != nil {
		return nil, err
	}
	// The chain as the next turn will see it: the request's input, then its output
	// so far (the compaction item), which cutAtCompaction reduces to the window.
	next := *j.req
	next.Input = nil
	history := make([]hearth.Item, 0, len(pc.history)+len(j.req.Input)+1)
	history = append(append(append(history, pc.history...), j.req.Input...), item)
	nj, err := j.e.prepare(WithCaller(ctx, j.caller), &next, history)
	if err != nil {
		var herr *hearth.Error
		if !errors.As(err, &herr) {
			herr = hearth.ServerError(err.Error())
		}
		b.Fail(herr, nil)
		return nil, err
	}
	nj.turn = j.turn
	return nj, nil
}

// cutAtCompaction returns history and input without what the conversation's last
// compaction item stands for: every item before it except system and developer
// messages and the last user message before it, which compaction keeps as they are
// (PrepareCompaction). A window from /v1/responses/compact holds only those before its
// compaction item, so nothing is cut from it; a chain whose response compacted itself
// holds its whole past, which the item replaces. cut is false when nothing was
// removed, and history and input are then the caller's.
func cutAtCompaction(history, input []hearth.Item) (h, in []hearth.Item, cut bool) {
	at := -1 // index of the last compaction item in history, then input
	for i := len(input) - 1; i >= 0 && at < 0; i-- {
		if input[i].Type == hearth.ItemCompaction {
			at = len(history) + i
		}
	}
	for i := len(history) - 1; i >= 0 && at < 0; i-- {
		if history[i].Type == hearth.ItemCompaction {
			at = i
		}
	}
	if at < 0 {
		return history, input, false
	}
	item := func(i int) *hearth.Item {
		if i < len(history) {
			return &history[i]
		}
		return &input[i-len(history)]
	}
	lastUser := -1
	for i := at - 1; i >= 0 && lastUser < 0; i-- {
		if it := item(i); it.Type == hearth.ItemMessage && it.Role == hearth.RoleUser {
			lastUser = i
		}
	}
	keep := func(i int) bool {
		it := item(i)
		return i >= at || i == lastUser ||
			it.Type == hearth.ItemMessage && (it.Role == hearth.RoleSystem || it.Role == hearth.RoleDeveloper)
	}
	removed := 0
	for i := 0; i < at; i++ {
		if !keep(i) {
			removed++
		}
	}
	if removed == 0 {
		return history, input, false
	}
	for i := range history {
		if keep(i) {
			h = append(h, history[i])
		}
	}
	for i := range input {
		if keep(len(history) + i) {
			in = append(in, input[i])
		}
	}
	return h, in, true
}
