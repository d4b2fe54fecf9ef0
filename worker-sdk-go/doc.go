// Package orbit is the Go worker SDK of Orbit (worker-sdk-go/README.md; the frames are those of
// protocol/frames.ts, documented as AsyncAPI at GET /v1/asyncapi.json). It carries the obligations
// every Orbit worker SDK has, in Go's idioms:
//
//   - NewWorker(Options) and Run(ctx): one worker identity per process, hello with
//     concurrency_keys=true, start confirmed before a handler runs, leases renewed, reconnect with
//     backoff and jitter and resume with the same identity, a draining stop when ctx is cancelled.
//   - A handler func(ctx, *Event) (any, error): its ctx is cancelled on task.cancel, a lost lease or
//     shutdown; Event.Task.ConcurrencyKey and Event.ConcurrencyToken (uint64, never a float).
//     A nil error is `succeeded`; a *RetryError is `retry`; an *UnknownOutcomeError is `unknown`
//     (both matched with errors.As); any other error is `failed`.
//   - Dial and Conn: one session without reconnect, for callers that drive the protocol
//     themselves; Registration.ConcurrencyKeys is theirs to declare.
//   - DecodeGatewayFrame and the SDK's refusals (AssignProblem, HelloOKProblem): the same checks as
//     the Node SDK, tested against the shared vectors in protocol/vectors/.
//
// The fenced resource for MySQL/MariaDB is package fenced; the HTTP client is package client.
package orbit
