package orbit

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The SDK's own checks on frames that passed their schema (docs/worker-protocol.md, "What an SDK
// must refuse"): the same rules and messages as the Node SDK's frame-checks.ts, so that the shared
// vectors hold both to one behaviour. A violation closes the session with 1002 and no handler runs.

// KnownAttempt is what this process already knows about an attempt (from an earlier assign or
// session): resume and a repeated assign must keep its key and token.
type KnownAttempt struct {
	ConcurrencyKey   *string
	ConcurrencyToken *string
}

func sameOpt(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// AssignProblem returns why a task.assign must be refused, or "" when it is acceptable.
// concurrencyKeys is what the session declared in hello; prev is what this process already knows
// about the attempt id (nil when nothing).
func AssignProblem(f *TaskAssign, concurrencyKeys bool, prev *KnownAttempt) string {
	key, tok := f.Task.ConcurrencyKey, f.ConcurrencyToken
	if key != nil && tok == nil {
		return "task.assign has a concurrency_key but no concurrency_token"
	}
	if key == nil && tok != nil {
		return "task.assign has a concurrency_token but no concurrency_key"
	}
	if tok != nil && !IsTokenString(*tok) {
		return "concurrency_token is not a non-zero uint64 decimal"
	}
	if key != nil {
		p := ConcurrencyKeyProblem(*key)
		if f.Task.keyNotWellFormed {
			p = "must be valid UTF-8 (lone surrogate)"
		}
		if p != "" {
			return "concurrency_key " + p
		}
		if !concurrencyKeys {
			return "keyed task assigned to a session that did not declare concurrency_keys"
		}
	}
	// Key and token are frozen for the attempt: a second assign that changes them would hand the
	// resource a wrong fencing token.
	if prev != nil && (!sameOpt(prev.ConcurrencyKey, key) || !sameOpt(prev.ConcurrencyToken, tok)) {
		return "repeated task.assign for an attempt with a different concurrency_key or concurrency_token"
	}
	return ""
}

// HelloOKProblem returns why a hello.ok must be refused ("" when acceptable) and the attempt it is
// about, if any: it must name this worker, and a resumed attempt keeps the token it was assigned.
func HelloOKProblem(f *HelloOK, workerID string, known map[string]KnownAttempt) (problem, attemptID string) {
	if f.WorkerID != workerID {
		return "hello.ok names another worker_id", ""
	}
	for _, r := range f.Resumed {
		tok := r.ConcurrencyToken
		if tok != nil && !IsTokenString(*tok) {
			return "resumed concurrency_token is not a non-zero uint64", r.AttemptID
		}
		if k, ok := known[r.AttemptID]; ok && !sameOpt(k.ConcurrencyToken, tok) {
			return "resume changed the concurrency_token of an attempt", r.AttemptID
		}
	}
	return "", ""
}

// IsTokenString reports whether tok is a fencing token on the wire: a uint64 decimal without
// leading zeros that is not "0" (tokens start at 1).
func IsTokenString(tok string) bool {
	_, err := ParseToken(tok)
	return err == nil
}

// ParseToken reads a fencing token exactly (strconv.ParseUint: never through a float).
func ParseToken(tok string) (uint64, error) {
	if !uint64RE.MatchString(tok) || tok == "0" {
		return 0, fmt.Errorf("concurrency_token %q is not a non-zero uint64 decimal", tok)
	}
	v, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("concurrency_token %q is not a non-zero uint64 decimal", tok)
	}
	return v, nil
}

// ConcurrencyKeyProblem returns why a concurrency_key is invalid, or "" (protocol/validation.ts):
// 1-191 code points, no control characters, no whitespace at either end.
func ConcurrencyKeyProblem(key string) string {
	if !utf8.ValidString(key) {
		return "must be valid UTF-8 (lone surrogate)"
	}
	n := utf8.RuneCountInString(key)
	if n < 1 || n > KeyMaxCodePoints {
		return fmt.Sprintf("must be 1-%d Unicode code points", KeyMaxCodePoints)
	}
	for _, r := range key {
		if unicode.Is(unicode.Cc, r) {
			return "must not contain control characters"
		}
	}
	first, _ := utf8.DecodeRuneInString(key)
	last, _ := utf8.DecodeLastRuneInString(key)
	if unicode.Is(unicode.White_Space, first) || unicode.Is(unicode.White_Space, last) {
		return "must not start or end with whitespace"
	}
	return ""
}
