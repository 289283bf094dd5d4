package respond

import (
	"context"

	"hearth"
)

// InputTokens counts the input tokens of a request without making its response: the
// prologue runs as for Create (the chain, the conversation, files, placement), the
// engine renders the prompt it would send, and the runtime counts it with the model's
// own tokenizer (engine.Job.PromptTokens). The count equals the input tokens the same
// request reports when it runs. The count is a (one-token) evaluation on the runtime,
// so it takes a generation slot through admission like a response: a full queue
// refuses it the same way. Nothing is stored.
func (s *Service) InputTokens(ctx context.Context, in *Request) (int, error) {
	p, err := s.prepare(ctx, in, false)
	if err != nil {
		return 0, err
	}
	defer p.close()
	if p.job == nil {
		return 0, hearth.ServerError("The request has no generation to count.")
	}
	adm, _, err := s.admitter.Admit(p.ctx, in.Meta, in.Body, "", p.place)
	if err != nil {
		return 0, err
	}
	defer adm.Done()
	if err := adm.Wait(p.ctx); err != nil {
		return 0, err
	}
	return p.job.PromptTokens(p.ctx)
}
