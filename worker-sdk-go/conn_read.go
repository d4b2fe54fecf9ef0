package orbit

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// The read side of a session: every incoming frame decoded and checked, replies matched to their
// requests, the rest handed to the callbacks; the session's end answers every waiting request.

func (c *Conn) readLoop() {
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			c.onClosed(closeCodeOf(err), closeReasonOf(err))
			return
		}
		c.touch()
		if typ != websocket.MessageText {
			c.violate(&ProtocolViolation{Message: "binary frame", CloseCode: 1003})
			return
		}
		f, err := DecodeGatewayFrame(data)
		if err != nil {
			c.violate(err.(*ProtocolViolation))
			return
		}
		if v := c.dispatch(f); v != nil {
			c.violate(v)
			return
		}
	}
}

func (c *Conn) dispatch(f GatewayFrame) *ProtocolViolation {
	switch f := f.(type) {
	case *HelloOK:
		return &ProtocolViolation{Message: "hello.ok after the session was established", CloseCode: 1002}
	case *TaskAssign:
		c.mu.Lock()
		prev, known := c.seen[f.AttemptID]
		var p *KnownAttempt
		if known {
			p = &prev
		}
		if problem := AssignProblem(f, c.opts.Registration.ConcurrencyKeys, p); problem != "" {
			c.mu.Unlock()
			return &ProtocolViolation{Message: problem, CloseCode: 1002, AttemptID: f.AttemptID}
		}
		if _, again := c.held[f.AttemptID]; !again {
			if len(c.held) >= c.maxCapacity {
				c.mu.Unlock()
				return &ProtocolViolation{Message: capacityProblem(len(c.held), c.maxCapacity), CloseCode: 1002, AttemptID: f.AttemptID}
			}
			c.held[f.AttemptID] = struct{}{}
		}
		c.remember(f.AttemptID, KnownAttempt{ConcurrencyKey: f.Task.ConcurrencyKey, ConcurrencyToken: f.ConcurrencyToken})
		c.mu.Unlock()
		if c.opts.OnAssign != nil {
			c.opts.OnAssign(c, f)
		}
	case *StartOK:
		c.settle(f.AttemptID, "start", f)
	case *ResultOK:
		c.release(f.AttemptID)
		c.settle(f.AttemptID, "result", f)
	case *RenewOK:
		c.release(f.Lost...)
		c.settleFIFO(&c.renews, f)
	case *DrainOK:
		c.settleFIFO(&c.drains, f)
	case *TaskCancel:
		c.release(f.AttemptID)
		if c.opts.OnCancel != nil {
			c.opts.OnCancel(c, f)
		}
	case *Goaway:
		if c.opts.OnGoaway != nil {
			c.opts.OnGoaway(c, f)
		}
	case *ErrorFrame:
		c.onErrorFrame(f)
	}
	return nil
}

// capacityProblem is the violation of an assign beyond the declared capacity.
func capacityProblem(held, capacity int) string {
	return fmt.Sprintf("task.assign beyond the declared capacity: %d attempts held, capacity %d", held, capacity)
}

// release: the gateway no longer counts these attempts against the session's capacity. Called on
// the read goroutine before the frame that says so is handed on, so an assign that follows it on
// the wire finds the slot free.
func (c *Conn) release(ids ...string) {
	c.mu.Lock()
	for _, id := range ids {
		delete(c.held, id)
	}
	c.mu.Unlock()
}

// fatalCloseWait is how long the gateway's close may take after a fatal error frame before the
// session is closed from this side.
const fatalCloseWait = 5 * time.Second

// seenLimit bounds the attempt ids remembered for the repeated-assign check.
const seenLimit = 100_000

func (c *Conn) remember(id string, k KnownAttempt) {
	if len(c.seen) >= seenLimit {
		for old := range c.seen { // forget an arbitrary one: a re-assign that late is not expected
			delete(c.seen, old)
			break
		}
	}
	c.seen[id] = k
}

// settle hands f to the oldest request of kind about the attempt; a reply nobody waits for (a late
// reply to a request abandoned by its caller) is dropped.
func (c *Conn) settle(attemptID, kind string, f GatewayFrame) {
	c.mu.Lock()
	list := c.pending[attemptID]
	for i, w := range list {
		if w.kind == kind {
			c.pending[attemptID] = append(list[:i:i], list[i+1:]...)
			if len(c.pending[attemptID]) == 0 {
				delete(c.pending, attemptID)
			}
			c.mu.Unlock()
			w.ch <- reply{frame: f}
			return
		}
	}
	c.mu.Unlock()
}

func (c *Conn) settleFIFO(list *[]*waiter, f GatewayFrame) {
	c.mu.Lock()
	if len(*list) == 0 {
		c.mu.Unlock()
		return
	}
	w := (*list)[0]
	*list = (*list)[1:]
	c.mu.Unlock()
	w.ch <- reply{frame: f}
}

func (c *Conn) onErrorFrame(f *ErrorFrame) {
	answered := false
	if f.AttemptID != nil {
		switch f.Code {
		case "LEASE_LOST", "NOT_FOUND", "STATE_CONFLICT":
			c.release(*f.AttemptID) // not (or no longer) this session's attempt
		}
		// The gateway answers one attempt's requests in order: an error about it answers the oldest.
		c.mu.Lock()
		list := c.pending[*f.AttemptID]
		if len(list) > 0 {
			w := list[0]
			if len(list) == 1 {
				delete(c.pending, *f.AttemptID)
			} else {
				c.pending[*f.AttemptID] = list[1:]
			}
			answered = true
			c.mu.Unlock()
			var err error = &GatewayError{Code: f.Code, Message: f.Message, Fatal: f.Fatal, AttemptID: *f.AttemptID}
			if f.Code == "LEASE_LOST" {
				err = &LeaseLostError{AttemptID: *f.AttemptID, Reason: "LEASE_LOST"}
			}
			w.ch <- reply{err: err}
		} else {
			c.mu.Unlock()
		}
	}
	if !answered && c.opts.OnError != nil {
		c.opts.OnError(c, f)
	}
	if f.Fatal {
		c.mu.Lock()
		c.failure = &GatewayError{Code: f.Code, Message: f.Message, Fatal: true}
		// A fatal error is followed by the gateway's close; one that never comes is forced. The
		// timer is stopped when the session ends sooner (onClosed).
		if !c.closed && c.closeTimer == nil {
			c.closeTimer = time.AfterFunc(fatalCloseWait, func() { _ = c.ws.CloseNow() })
		}
		c.mu.Unlock()
	}
}

func (c *Conn) violate(v *ProtocolViolation) {
	c.mu.Lock()
	c.failure = v
	c.mu.Unlock()
	if c.opts.OnViolation != nil {
		c.opts.OnViolation(c, v)
	}
	_ = c.ws.Close(websocket.StatusCode(v.CloseCode), truncateReason(v.Message))
	c.onClosed(v.CloseCode, v.Message)
}

// onClosed ends the session once: every waiting request is answered with why.
func (c *Conn) onClosed(code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.code, c.reason = true, code, reason
	err := c.closedErrLocked()
	var waiting []*waiter
	for _, list := range c.pending {
		waiting = append(waiting, list...)
	}
	waiting = append(append(waiting, c.renews...), c.drains...)
	c.pending, c.renews, c.drains = map[string][]*waiter{}, nil, nil
	if c.closeTimer != nil {
		c.closeTimer.Stop()
	}
	c.mu.Unlock()
	for _, w := range waiting {
		w.ch <- reply{err: err}
	}
	c.stop()
	_ = c.ws.CloseNow()
	close(c.done)
}

func (c *Conn) touch() { c.lastSeen.Store(time.Now().UnixNano()) }

// watchIdle drops a session that received nothing (frame or ping) for IdleTimeout.
func (c *Conn) watchIdle() {
	t := time.NewTimer(c.opts.IdleTimeout)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			quiet := time.Since(time.Unix(0, c.lastSeen.Load()))
			if quiet < c.opts.IdleTimeout {
				t.Reset(c.opts.IdleTimeout - quiet)
				continue
			}
			c.mu.Lock()
			if c.failure == nil {
				c.failure = errors.New("idle timeout: no frame or ping from the gateway")
			}
			c.mu.Unlock()
			_ = c.ws.CloseNow()
			return
		}
	}
}

func closeCodeOf(err error) int {
	if s := websocket.CloseStatus(err); s != -1 {
		return int(s)
	}
	return 1006
}

func closeReasonOf(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return err.Error()
}

// truncateReason cuts a close reason to 120 bytes on a rune boundary (RFC 6455 allows 123).
func truncateReason(s string) string {
	if len(s) <= 120 {
		return s
	}
	s = s[:120]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
