package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// The stable error codes of protocol/errors.ts. The code is the contract; messages are for
// humans and may change. A server newer than this package may send a code not listed here:
// APIError keeps it as sent.
const (
	CodeInvalidArgument     = "INVALID_ARGUMENT"
	CodeProtocolError       = "PROTOCOL_ERROR"
	CodeUnauthenticated     = "UNAUTHENTICATED"
	CodePermissionDenied    = "PERMISSION_DENIED"
	CodeNotFound            = "NOT_FOUND"
	CodeMethodNotAllowed    = "METHOD_NOT_ALLOWED"
	CodeIdempotencyConflict = "IDEMPOTENCY_CONFLICT"
	CodeStateConflict       = "STATE_CONFLICT"
	CodeResourceBusy        = "RESOURCE_BUSY"
	CodeResourceRetired     = "RESOURCE_RETIRED"
	CodeLeaseLost           = "LEASE_LOST"
	CodeEventHistoryExpired = "EVENT_HISTORY_EXPIRED"
	CodeRequestTimeout      = "REQUEST_TIMEOUT"
	CodePayloadTooLarge     = "PAYLOAD_TOO_LARGE"
	CodeQuotaExceeded       = "QUOTA_EXCEEDED"
	CodeInternal            = "INTERNAL"
	CodeUnavailable         = "UNAVAILABLE"
)

// APIError is an error the server answered (or, with Status 0, a request this package refused to
// send, such as a command without an idempotency key). Match it with errors.As and switch on Code.
type APIError struct {
	// Status is the HTTP status; 0 when the request was never sent.
	Status int
	// Code is one of the Code constants.
	Code    string
	Message string
	// RequestID names the request in the gateway's logs.
	RequestID string
	// Details is the error's structured context (a field name, violations, blockers). Numbers in
	// it are json.Number, so a large value is never rounded through float64.
	Details map[string]any
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("orbit: %s", e.Code)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Retryable reports whether the same request may succeed later unchanged (a command with the same
// idempotency key): a quota that frees up, a database that comes back, a slow upload.
func (e *APIError) Retryable() bool {
	switch e.Code {
	case CodeQuotaExceeded, CodeUnavailable, CodeRequestTimeout:
		return true
	}
	return false
}

// CodeOf returns the code of the APIError in err's chain, or "" when there is none (a transport
// error, a cancelled context).
func CodeOf(err error) string {
	var e *APIError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// wireError is the `error` member of an envelope, and of a refused batch item.
type wireError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (w *wireError) apiError(status int, requestID string) *APIError {
	return &APIError{Status: status, Code: w.Code, Message: w.Message, RequestID: requestID, Details: w.Details}
}

// envelope is every response of the API: data on success, error otherwise.
type envelope struct {
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
	Error     *wireError      `json:"error"`
}

// decodeJSON decodes with UseNumber, so that no value this package leaves untyped (error details)
// turns a uint64 into a float64.
func decodeJSON(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(out)
}

// decodeResponse turns a response into its `data` or an *APIError. headerID is the X-Request-Id
// header, used when the body does not name the request.
func decodeResponse(status int, headerID string, raw []byte) (json.RawMessage, error) {
	var env envelope
	parsed := decodeJSON(raw, &env) == nil
	if env.RequestID == "" {
		env.RequestID = headerID
	}
	if parsed && status >= 200 && status < 300 && env.Data != nil {
		return env.Data, nil
	}
	if parsed && env.Error != nil && env.Error.Code != "" {
		return nil, env.Error.apiError(status, env.RequestID)
	}
	// Not an envelope (a proxy's page, a truncated body): classify by status, keep the start of
	// the body for whoever reads the message.
	snippet := raw
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	return nil, &APIError{Status: status, Code: codeForStatus(status), RequestID: env.RequestID,
		Message: fmt.Sprintf("unexpected HTTP %d response: %s", status, snippet)}
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodePermissionDenied
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusRequestTimeout:
		return CodeRequestTimeout
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return CodeQuotaExceeded
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return CodeUnavailable
	}
	if status >= 400 && status < 500 {
		return CodeInvalidArgument
	}
	// 5xx, or a 2xx/3xx that is not an envelope: something between us and the API is broken.
	return CodeInternal
}
