// Package client is a typed client for the Orbit HTTP API (docs/http-api.md, docs/schedules.md,
// docs/workflows.md): what a producer or an operator calls — submit and batch submit, tasks and
// attempts, queues, subscriptions and deliveries, schedules, workflows and runs.
//
//	c := client.New("http://127.0.0.1:8080", token)
//	r, err := c.SubmitTask(ctx, "update-object-42-operation-001", client.SubmitTaskRequest{
//		QueueID: queueID, Handler: "object.update", HandlerVersion: "v1", PayloadVersion: "v1",
//		Payload: json.RawMessage(`{"object_ref":"objects/42"}`), ConcurrencyKey: "object/42",
//	})
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeIdempotencyConflict { ... }
//
// Every command takes its idempotency key as a parameter. The key is the command's identity: a
// retry after a timeout must send the same key to get the first receipt instead of a second
// effect, and only the caller can keep it, so the client never makes one up.
//
// uint64 values (revisions, fencing tokens, sequences) are decimal strings on the wire and uint64
// here (the `,string` JSON option), never float64; payloads and outputs stay json.RawMessage, so
// their numbers are not rounded either.
//
// The types are written by hand rather than generated from /v1/openapi.json with oapi-codegen:
// the document describes request bodies and parameters, but every success response is the generic
// envelope (data is an untyped object), so generated code would have typed requests and untyped
// answers; it is OpenAPI 3.1, which oapi-codegen only partly supports; its inline schemas would
// become anonymous type names; and the `,string` uint64 fields, RawMessage payloads and
// time.Time fields would need overrides anyway. By hand the package is stdlib only, with one
// struct per object of the spec and one method per endpoint, named as the spec names them.
package client
