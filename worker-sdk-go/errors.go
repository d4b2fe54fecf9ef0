package orbit

import (
	"fmt"
	"time"
)

// Errors a handler returns decide the outcome the worker reports (matched with errors.As, so a
// wrapped one counts): *RetryError → retry, *UnknownOutcomeError → unknown, anything else →
// failed (code HANDLER_ERROR, or the code of a *PermanentError).

// RetryError says the effect certainly did not happen and trying again is safe.
type RetryError struct {
	// Code is the result's error code (default RETRYABLE).
	Code string
	// After is the backoff the worker asks for (retry_after_ms); 0 leaves it to the queue's policy.
	After time.Duration
	Err   error
}

// Retry wraps err as a retry outcome after the given backoff (0: the queue's policy).
func Retry(err error, after time.Duration) *RetryError { return &RetryError{Err: err, After: after} }

func (e *RetryError) Error() string { return "retry: " + errText(e.Err) }
func (e *RetryError) Unwrap() error { return e.Err }

// UnknownOutcomeError says the effect may or may not have happened (a timeout after the request
// was sent): the task goes to NEEDS_REVIEW instead of being retried blindly.
type UnknownOutcomeError struct {
	Code string // default UNKNOWN_OUTCOME
	Err  error
}

// Unknown wraps err as an unknown outcome.
func Unknown(err error) *UnknownOutcomeError { return &UnknownOutcomeError{Err: err} }

func (e *UnknownOutcomeError) Error() string { return "unknown outcome: " + errText(e.Err) }
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// PermanentError fails the task with an explicit code (any other error fails it too, as
// HANDLER_ERROR).
type PermanentError struct {
	Code string
	Err  error
}

func (e *PermanentError) Error() string { return errText(e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// ProtocolViolation: the gateway broke the protocol (a bad frame, an inconsistent token, …). The
// session is closed with CloseCode (1002, or 1003 for a binary frame) and no handler runs for it.
type ProtocolViolation struct {
	Message   string
	CloseCode int
	AttemptID string
}

func (e *ProtocolViolation) Error() string { return "protocol violation: " + e.Message }

// Code is the stable error code (PROTOCOL_ERROR).
func (e *ProtocolViolation) Code() string { return "PROTOCOL_ERROR" }

// GatewayError is an error frame from the gateway (LEASE_LOST is a *LeaseLostError), or a refused
// WebSocket handshake (Status set, e.g. 401).
type GatewayError struct {
	Code      string
	Message   string
	Fatal     bool
	AttemptID string
	Status    int
}

func (e *GatewayError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Code, e.Status, e.Message)
	}
	return e.Code + ": " + e.Message
}

// LeaseLostError: the right to execute an attempt is gone (task.cancel, an expired or taken-over
// lease, a lost resume). It is the cause of a handler's cancelled ctx (context.Cause) and the
// error of a start or result answered LEASE_LOST.
type LeaseLostError struct {
	AttemptID string
	Reason    string
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("lease lost for attempt %s: %s", e.AttemptID, e.Reason)
}

// ConnectionClosedError: the session closed (or never opened) while a request waited for its
// reply. The request may or may not have reached the gateway; the worker re-sends it.
type ConnectionClosedError struct {
	CloseCode int // 1006 when the connection dropped or never opened
	Reason    string
}

func (e *ConnectionClosedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("connection closed (%d)", e.CloseCode)
	}
	return fmt.Sprintf("connection closed (%d: %s)", e.CloseCode, e.Reason)
}

// FrameError: the SDK refused to send a frame it built (INVALID_ARGUMENT for a schema violation,
// PAYLOAD_TOO_LARGE over max_frame_bytes). Nothing was sent; the session is intact.
type FrameError struct {
	Code    string
	Message string
}

func (e *FrameError) Error() string { return e.Code + ": " + e.Message }
