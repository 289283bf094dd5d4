package server

// HoldSlot takes a generation slot of model as if a request held it, so tests can
// make the next requests queue without timing a real generation. The returned function
// frees it.
func HoldSlot(s *Server, model string) (release func()) {
	// On the runtime requests for model are placed on: the first, when it is idle.
	t, err := s.admission.EnterOn(model, "test:holder", s.pool.Candidates(model)[0])
	if err != nil {
		panic(err)
	}
	if !t.Admitted() {
		panic("HoldSlot: no free slot")
	}
	return t.Done
}
