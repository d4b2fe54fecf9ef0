package main

import (
	"math"
	"sync"
	"time"
)

// progress prints the benchmark's lines as bench/worker-proc.ts does: with WORKER_PROGRESS_MS=N,
// {"ev":"progress","completed","t"} (t: epoch ms of the latest result.ok) within N ms once nothing
// is in flight, else every 10 N ms; with WORKER_LATENCY=1, one {"ev":"latency"} line at exit with
// each attempt's handler-return → result.ok time in ms.
type progress struct {
	every    time.Duration
	latency  bool
	inFlight func() int

	mu         sync.Mutex
	completed  int
	reported   int
	reportedAt time.Time
	lastResult time.Time
	due        time.Time
	timer      *time.Timer
	doneAt     map[string]time.Time
	latencies  []float64
}

func newProgress(every time.Duration, latency bool) *progress {
	return &progress{every: every, latency: latency, doneAt: map[string]time.Time{}, inFlight: func() int { return 0 }}
}

// handled records a handler's return (the start of its result → result.ok time).
func (p *progress) handled(attemptID string) {
	if !p.latency {
		return
	}
	p.mu.Lock()
	p.doneAt[attemptID] = time.Now()
	p.mu.Unlock()
}

// result counts an answered result (the attempt is still in flight while this runs).
func (p *progress) result(attemptID string) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completed++
	if t0, ok := p.doneAt[attemptID]; ok {
		p.latencies = append(p.latencies, math.Round(float64(now.Sub(t0).Microseconds())/10)/100)
		delete(p.doneAt, attemptID)
	}
	if p.every <= 0 {
		return
	}
	p.lastResult = now
	delay := 10 * p.every
	if p.inFlight() <= 1 {
		delay = p.every
	}
	p.armLocked(now, delay)
}

// armLocked schedules the progress line; an earlier due time wins.
func (p *progress) armLocked(now time.Time, delay time.Duration) {
	due := now.Add(delay)
	if p.timer != nil && !p.due.After(due) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.due = due
	p.timer = time.AfterFunc(delay, p.fire)
}

func (p *progress) fire() {
	at := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.completed == p.reported {
		return
	}
	if p.inFlight() > 0 && at.Sub(p.reportedAt) < 10*p.every {
		p.armLocked(at, p.reportedAt.Add(10*p.every).Sub(at))
		return
	}
	p.reported, p.reportedAt = p.completed, at
	out(map[string]any{"ev": "progress", "completed": p.completed, "t": p.lastResult.UnixMilli()})
}

// finish prints the latency line (WORKER_LATENCY=1).
func (p *progress) finish() {
	if !p.latency {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ms := p.latencies
	if ms == nil {
		ms = []float64{}
	}
	out(map[string]any{"ev": "latency", "completed": p.completed, "result_ms": ms})
}
