package orbit

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The frames the worker sends (docs/worker-protocol.md, "Worker → gateway frames"), checked against
// their schema before they are sent: a frame the gateway would refuse costs the whole session (a
// protocol error is fatal), so the SDK refuses it here with a *FrameError instead.

// HandlerRegistration is one handler name and the versions of it a session runs.
type HandlerRegistration struct {
	Handler  string   `json:"handler"`
	Versions []string `json:"versions"`
}

// Registration is who a session is and what it takes (the hello frame).
type Registration struct {
	// WorkerID is unique to this process; a second session with the same id replaces the first.
	WorkerID string
	// Queues are the queue ids to take tasks from (1 to 64).
	Queues []string
	// Capacity is how many attempts the session holds at once at most (0 to 1024).
	Capacity int
	// ConcurrencyKeys declares that this process hands the fencing token to its resources: only
	// then does the gateway assign keyed tasks. It is frozen for the worker id. The zero value
	// (false) is the safe one; declare true only once the resource side verifies tokens.
	ConcurrencyKeys bool
	// Handlers filters what is assigned (nil: every handler of the queues).
	Handlers []HandlerRegistration
	// Resume lists attempt ids held from an earlier session.
	Resume []string
	// Agent is shown in logs and GET /v1/workers (default Agent).
	Agent string
}

// ResultError is a result's error (code and message).
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResultInput is a result as the worker sends it.
type ResultInput struct {
	AttemptID string
	Outcome   string // succeeded, failed, retry or unknown
	// Output is the JSON output of a succeeded attempt (nil: none).
	Output       json.RawMessage
	Error        *ResultError
	RetryAfterMs *int64
}

type helloWire struct {
	Type            string                `json:"type"`
	Protocol        int                   `json:"protocol"`
	WorkerID        string                `json:"worker_id"`
	Queues          []string              `json:"queues"`
	Capacity        int                   `json:"capacity"`
	ConcurrencyKeys bool                  `json:"concurrency_keys"`
	Handlers        []HandlerRegistration `json:"handlers,omitempty"`
	Resume          []string              `json:"resume,omitempty"`
	Agent           string                `json:"agent"`
}

type resultWire struct {
	Type         string          `json:"type"`
	AttemptID    string          `json:"attempt_id"`
	Outcome      string          `json:"outcome"`
	Output       json.RawMessage `json:"output,omitempty"`
	Error        *ResultError    `json:"error,omitempty"`
	RetryAfterMs *int64          `json:"retry_after_ms,omitempty"`
}

func invalid(frame, problem string) *FrameError {
	return &FrameError{Code: "INVALID_ARGUMENT", Message: "invalid " + frame + " frame: " + problem}
}

// helloFrame is the hello frame of a registration, or INVALID_ARGUMENT before any I/O.
func helloFrame(r Registration) ([]byte, error) {
	agent := r.Agent
	if agent == "" {
		agent = Agent
	}
	h := helloWire{Type: "hello", Protocol: 1, WorkerID: r.WorkerID, Queues: r.Queues, Capacity: r.Capacity,
		ConcurrencyKeys: r.ConcurrencyKeys, Handlers: r.Handlers, Resume: r.Resume, Agent: agent}
	if err := checkHello(&h); err != nil {
		return nil, invalid("hello", err.Error())
	}
	return json.Marshal(h)
}

func checkHello(h *helloWire) error {
	if !isName(h.WorkerID, WorkerIDMax) {
		return errAt("/worker_id", "must be 1-%d of [A-Za-z0-9._:-]", WorkerIDMax)
	}
	if err := checkIDList(h.Queues, "/queues", 1, MaxHelloQueues); err != nil {
		return err
	}
	if h.Capacity < 0 || h.Capacity > MaxCapacity {
		return errAt("/capacity", "must be an integer in 0..%d", MaxCapacity)
	}
	if h.Handlers != nil && (len(h.Handlers) < 1 || len(h.Handlers) > MaxHelloHandlers) {
		return errAt("/handlers", "must have 1-%d items", MaxHelloHandlers)
	}
	for i, hr := range h.Handlers {
		p := "/handlers/" + strconv.Itoa(i)
		if !isName(hr.Handler, HandlerMax) {
			return errAt(p+"/handler", "must be 1-%d of [A-Za-z0-9._:-]", HandlerMax)
		}
		if len(hr.Versions) < 1 || len(hr.Versions) > MaxHandlerVersions {
			return errAt(p+"/versions", "must have 1-%d items", MaxHandlerVersions)
		}
		for j, v := range hr.Versions {
			if !isName(v, VersionMax) {
				return errAt(p+"/versions/"+strconv.Itoa(j), "must be 1-%d of [A-Za-z0-9._:-]", VersionMax)
			}
		}
	}
	if h.Resume != nil {
		if err := checkIDList(h.Resume, "/resume", 0, MaxIDsPerFrame); err != nil {
			return err
		}
	}
	return checkText(h.Agent, false, "/agent", 1, AgentMax)
}

func checkIDList(ids []string, path string, minItems, maxItems int) error {
	if len(ids) < minItems || len(ids) > maxItems {
		return errAt(path, "must have %d-%d items", minItems, maxItems)
	}
	for i, id := range ids {
		if id == "" || utf16Len(id) > IDFieldMax {
			return errAt(path+"/"+strconv.Itoa(i), "must be 1-%d characters", IDFieldMax)
		}
	}
	return nil
}

// checkText: free text the gateway stores. A Go string goes out as valid UTF-8 (json.Marshal
// replaces invalid bytes), so only a lone surrogate read from JSON text (lone) is refused here.
func checkText(s string, lone bool, path string, minLen, maxLen int) error {
	if lone {
		return errAt(path, "must be valid UTF-8 text (a lone surrogate cannot be stored)")
	}
	if n := utf16Len(strings.ToValidUTF8(s, "\uFFFD")); n < minLen || n > maxLen {
		return errAt(path, "must be %d-%d characters", minLen, maxLen)
	}
	return nil
}

var outcomes = []string{"succeeded", "failed", "retry", "unknown"}

// resultFrame is the result frame for r, or a *FrameError (INVALID_ARGUMENT, PAYLOAD_TOO_LARGE).
func resultFrame(r ResultInput, maxFrameBytes int) ([]byte, error) {
	w := resultWire{Type: "result", AttemptID: r.AttemptID, Outcome: r.Outcome, Output: r.Output, Error: r.Error, RetryAfterMs: r.RetryAfterMs}
	if err := checkResult(&w, false, false); err != nil {
		return nil, invalid("result", err.Error())
	}
	b, err := marshalPlain(w)
	if err != nil {
		return nil, invalid("result", "/output must be JSON: "+err.Error())
	}
	if maxFrameBytes > 0 && len(b) > maxFrameBytes {
		return nil, &FrameError{Code: "PAYLOAD_TOO_LARGE", Message: "result frame exceeds max_frame_bytes (" + strconv.Itoa(maxFrameBytes) + ")"}
	}
	return b, nil
}

func checkResult(w *resultWire, loneCode, loneMessage bool) error {
	if w.AttemptID == "" || utf16Len(w.AttemptID) > IDFieldMax {
		return errAt("/attempt_id", "must be 1-%d characters", IDFieldMax)
	}
	if !contains(outcomes, w.Outcome) {
		return errAt("/outcome", "must be succeeded, failed, retry or unknown")
	}
	if w.Output != nil {
		if !json.Valid(w.Output) {
			return errAt("/output", "must be JSON")
		}
		if jsonDepth(w.Output) > MaxJSONDepth-1 {
			return errAt("/output", "is nested deeper than %d levels", MaxJSONDepth-1)
		}
	}
	if w.Error != nil {
		if err := checkText(w.Error.Code, loneCode, "/error/code", 1, ErrorCodeMax); err != nil {
			return err
		}
		if err := checkText(w.Error.Message, loneMessage, "/error/message", 0, ErrorMessageMax); err != nil {
			return err
		}
	}
	if w.RetryAfterMs != nil && (*w.RetryAfterMs < 0 || *w.RetryAfterMs > MaxBackoffMs) {
		return errAt("/retry_after_ms", "must be an integer in 0..%d", MaxBackoffMs)
	}
	return nil
}

func renewFrame(ids []string) ([]byte, error) {
	if err := checkIDList(ids, "/attempt_ids", 1, MaxIDsPerFrame); err != nil {
		return nil, invalid("renew", err.Error())
	}
	return json.Marshal(struct {
		Type       string   `json:"type"`
		AttemptIDs []string `json:"attempt_ids"`
	}{"renew", ids})
}

func startFrame(id string) ([]byte, error) {
	// An id needs no JSON escaping; anything else is refused rather than escaped.
	if !isID(id) {
		return nil, invalid("start", "/attempt_id must be an id (32 lowercase hex characters)")
	}
	return []byte(`{"type":"start","attempt_id":"` + id + `"}`), nil
}

func capacityFrame(n int) ([]byte, error) {
	if n < 0 || n > MaxCapacity {
		return nil, invalid("capacity", "/capacity must be an integer in 0..1024")
	}
	return []byte(`{"type":"capacity","capacity":` + strconv.Itoa(n) + `}`), nil
}
