package engine

import (
	"context"
	"errors"

	"hearth"
	"hearth/internal/scrub"
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
func (e *Engine) compactFirst(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item, in Inputs,
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
	cp, cerr := e.PrepareCompaction(ctx, req, history, in)
	if cerr != nil {
		if errors.As(cerr, &herr) && herr.Code == CodeNothingToCompact {
			return j, err
		}
		return nil, cerr
	}
	if j == nil {
		// The input does not fit as it is: the job is prepared again, from the
		// compacted window, when it runs.
		rt := e.on(in.Placement)
		m, merr := e.model(ctx, rt, req.Model)
		if merr != nil {
			return nil, merr
		}
		j = &Job{e: e, rt: rt, Model: m, req: req, in: in}
	}
	cp.whole = true
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
	f := &promptFit{e: j.e, rt: j.rt, gen: j.gen, window: j.window}
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
			herr = hearth.ServerError(scrub.HostDetails(err.Error()))
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
	nj, err := j.e.prepare(ctx, &next, history, j.in)
	if err != nil {
		var herr *hearth.Error
		if !errors.As(err, &herr) {
			herr = hearth.ServerError(scrub.HostDetails(err.Error()))
		}
		b.Fail(herr, nil)
		return nil, err
	}
	nj.turn = j.turn
	return nj, nil
}

// cutAtCompaction returns history and input without what the conversation's last
// compaction item stands for. The item of a server-side compaction stands for the
// whole conversation before it and carries what compaction kept as it was (system and
// developer messages, the last user message): those replace everything before it, so
// the item continues the conversation whatever the client sent before it (all of it,
// or nothing, as OpenAI tells clients they may). Any other compaction item (from
// /v1/responses/compact, or one hearth cannot open, which openSealed reports) stands
// for every item before it but system and developer messages and the last user
// message before it, which stay where they are: a compact window holds only those
// before its item, so nothing is cut from it. cut is false when nothing changed, and
// history and input are then the caller's.
func (e *Engine) cutAtCompaction(history, input []hearth.Item) (h, in []hearth.Item, cut bool) {
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
	if p, ok := e.openCompaction(item(at)); ok && p.Whole {
		// The kept items become the history's start; the item and what follows it
		// stay where they are.
		h = append(h, p.Kept...)
		if at < len(history) {
			return append(h, history[at:]...), input, true
		}
		return h, input[at-len(history):], true
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
