package hearth

// AddCompaction reports the compaction item of a server-side compaction, whole: it
// completes the open item, if any, and adds the item with its encrypted_content,
// announced by response.output_item.added and ended by response.output_item.done
// (OpenAI emits the compaction item in the response's stream and output, before what
// the model writes from the compacted window). usage is what the summarising
// generation counted; the response's final usage includes it.
func (b *Builder) AddCompaction(it Item, usage Usage) error {
	c := Item{Type: ItemCompaction, ID: it.ID, EncryptedContent: it.EncryptedContent}
	if c.ID == "" {
		c.ID = NewID(PrefixCompaction)
	}
	if err := b.startItem(c); err != nil {
		return err
	}
	b.spent = addUsage(b.spent, usage)
	b.closeItem(StatusCompleted)
	return nil
}

// addUsage is the sum of two usages, details included; its total is recomputed
// where it ends (finish).
func addUsage(a, b Usage) Usage {
	if b == (Usage{}) {
		return a
	}
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.InputTokensDetails.CachedTokens += b.InputTokensDetails.CachedTokens
	a.OutputTokensDetails.ReasoningTokens += b.OutputTokensDetails.ReasoningTokens
	if a.TotalTokens != 0 || b.TotalTokens != 0 {
		a.TotalTokens = a.InputTokens + a.OutputTokens
	}
	return a
}
