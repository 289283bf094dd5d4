package server

// HoldSlot takes a generation slot of model as if a request held it, so tests can
// make the next requests queue without timing a real generation. The returned function
// frees it.
func HoldSlot(s *Server, model string) (release func()) {
	t, err := s.admission.Enter(model, "test:holder")
	if err != nil {
		panic(err)
	}
	if !t.Admitted() {
		panic("HoldSlot: no free slot")
	}
	return t.Done
}
