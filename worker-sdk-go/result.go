package orbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// How a handler's return becomes the result frame (docs/worker-protocol.md, SDK obligations), in one
// place: the Node SDK's handler-result.ts in Go's terms.

// successResult is the result of a handler that returned output and no error. The output is
// frozen as JSON text, so a re-send after a reconnect carries exactly the same content (and is
// deduplicated by the gateway).
func successResult(attemptID string, output any) ResultInput {
	r := ResultInput{AttemptID: attemptID, Outcome: "succeeded"}
	if output == nil {
		return r
	}
	var text []byte
	switch v := output.(type) {
	case json.RawMessage:
		if !json.Valid(v) {
			return failed(attemptID, "OUTPUT_NOT_SERIALIZABLE", "handler output is a json.RawMessage that is not valid JSON")
		}
		text = v
	default:
		b, err := marshalPlain(v)
		if err != nil {
			// The effect happened but its output cannot be reported: fail loudly rather than lose
			// the session to a malformed frame.
			return failed(attemptID, "OUTPUT_NOT_SERIALIZABLE", err.Error())
		}
		text = b
	}
	if len(text) > MaxOutputBytes {
		return failed(attemptID, "OUTPUT_TOO_LARGE", fmt.Sprintf("handler output is %d bytes of JSON; the limit is %d", len(text), MaxOutputBytes))
	}
	if jsonDepth(text) > MaxJSONDepth-1 {
		return failed(attemptID, "OUTPUT_TOO_DEEP", fmt.Sprintf("handler output is nested deeper than %d levels", MaxJSONDepth-1))
	}
	r.Output = text
	return r
}

// handlerErrorResult maps the error a handler returned with its ctx. After a timed-out drain, whose
// cancel cause is an *UnknownOutcomeError (the effect may or may not have happened), a handler that
// returns its ctx's error (context.Canceled or the cause, wrapped or not) reports that cause:
// unknown, and the task goes to NEEDS_REVIEW rather than FAILED. An error of the handler's own
// keeps its mapping (errorResult): a *RetryError, an *UnknownOutcomeError of its own, a
// *PermanentError (even one wrapping context.Cause(ctx)), or any other error not from the ctx.
func handlerErrorResult(ctx context.Context, attemptID string, err error) ResultInput {
	cause := context.Cause(ctx)
	var closed *UnknownOutcomeError
	if !errors.As(cause, &closed) {
		return errorResult(attemptID, err)
	}
	var re *RetryError
	var ue *UnknownOutcomeError
	var pe *PermanentError
	switch {
	case errors.As(err, &re), errors.As(err, &ue) && ue != closed:
		return errorResult(attemptID, err)
	case errors.As(err, &pe):
		return failed(attemptID, codeOr(pe.Code, "FAILED"), errText(pe.Err))
	case errors.Is(err, context.Canceled), errors.Is(err, closed):
		return errorResult(attemptID, closed)
	}
	return errorResult(attemptID, err)
}

// errorResult maps a handler's error: *RetryError → retry, *UnknownOutcomeError → unknown,
// *PermanentError → failed with its code, anything else → failed HANDLER_ERROR.
func errorResult(attemptID string, err error) ResultInput {
	var re *RetryError
	if errors.As(err, &re) {
		r := ResultInput{AttemptID: attemptID, Outcome: "retry", Error: &ResultError{Code: codeOr(re.Code, "RETRYABLE"), Message: clip(errText(re.Err), ErrorMessageMax)}}
		if re.After > 0 {
			ms := min(re.After.Milliseconds(), MaxBackoffMs)
			r.RetryAfterMs = &ms
		}
		return r
	}
	var ue *UnknownOutcomeError
	if errors.As(err, &ue) {
		return ResultInput{AttemptID: attemptID, Outcome: "unknown", Error: &ResultError{Code: codeOr(ue.Code, "UNKNOWN_OUTCOME"), Message: clip(errText(ue.Err), ErrorMessageMax)}}
	}
	var pe *PermanentError
	if errors.As(err, &pe) {
		return failed(attemptID, codeOr(pe.Code, "FAILED"), errText(pe.Err))
	}
	return failed(attemptID, "HANDLER_ERROR", err.Error())
}

func failed(attemptID, code, message string) ResultInput {
	return ResultInput{AttemptID: attemptID, Outcome: "failed", Error: &ResultError{Code: code, Message: clip(message, ErrorMessageMax)}}
}

func codeOr(code, fallback string) string {
	if code == "" {
		return fallback
	}
	return clip(code, ErrorCodeMax)
}

// clip makes s valid UTF-8 and cuts it to at most max UTF-16 units (the schema's count) on a rune
// boundary.
func clip(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s // each byte is at most one UTF-16 unit
	}
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > max {
			return s[:i]
		}
		n += w
	}
	return s
}
