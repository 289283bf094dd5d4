package server

import (
	"context"
	"sync"
)

// jobs tracks the background responses running in this process, so that a cancel
// request can stop one and shutdown can stop them all.
type jobs struct {
	mu        sync.Mutex
	running   map[string]context.CancelFunc
	cancelled map[string]bool
	// journals are the live event journals of the stored responses running here.
	journals map[string]*journal
	wg       sync.WaitGroup
	root     context.Context
	stop     context.CancelFunc
}

func newJobs() *jobs {
	root, stop := context.WithCancel(context.Background())
	return &jobs{running: map[string]context.CancelFunc{}, cancelled: map[string]bool{}, journals: map[string]*journal{}, root: root, stop: stop}
}

// background returns the context a background response runs under: independent of
// any client, ended by Cancel or by Shutdown.
func (s *Server) background(id string) context.Context {
	ctx, cancel := context.WithCancel(s.jobs.root)
	s.jobs.mu.Lock()
	s.jobs.running[id] = cancel
	s.jobs.mu.Unlock()
	s.jobs.wg.Add(1)
	return ctx
}

// release forgets a finished response.
func (s *Server) release(id string) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if cancel, ok := s.jobs.running[id]; ok {
		cancel()
		delete(s.jobs.running, id)
		delete(s.jobs.cancelled, id)
		s.jobs.wg.Done()
	}
}

// cancelJob stops a running background response; it reports whether one was running.
func (s *Server) cancelJob(id string) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	cancel, ok := s.jobs.running[id]
	if ok {
		s.jobs.cancelled[id] = true
		cancel()
	}
	return ok
}

func (s *Server) cancelled(id string) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.cancelled[id]
}

// Shutdown stops the background responses still running and waits until each has
// stored its final state, or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.jobs.stop()
	s.changes.stop()
	s.vectorStores.Close() // the files in hand stay in_progress for the next start
	done := make(chan struct{})
	go func() { s.jobs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
