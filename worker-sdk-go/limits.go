package orbit

// The numeric limits of the worker protocol that the SDK checks before sending (protocol/limits.ts
// is the one source; these mirror it and the shared vectors test both against the same frames).
const (
	// Subprotocol is the WebSocket subprotocol of the worker protocol.
	Subprotocol = "orbit.worker.v1"
	// DefaultMaxFrameBytes is the largest frame the gateway accepts unless hello.ok says otherwise.
	DefaultMaxFrameBytes = 1024 * 1024
	// MaxOutputBytes bounds a result's output, serialized as JSON.
	MaxOutputBytes = 256 * 1024
	// MaxCapacity bounds hello's and the capacity frame's capacity.
	MaxCapacity = 1024
	// MaxIDsPerFrame bounds a renew frame's attempt ids and hello's resume list.
	MaxIDsPerFrame = 1024
	// MaxHelloQueues bounds hello's queues.
	MaxHelloQueues = 64
	// MaxHelloHandlers and MaxHandlerVersions bound hello's handler filter.
	MaxHelloHandlers   = 256
	MaxHandlerVersions = 64
	// MaxBackoffMs bounds a retry result's retry_after_ms (one day).
	MaxBackoffMs = 86_400_000
	// WorkerIDMax, VersionMax and HandlerMax bound the names of hello.
	WorkerIDMax = 64
	VersionMax  = 64
	HandlerMax  = 128
	// IDFieldMax bounds an id-valued field the SDK sends (attempt and queue ids).
	IDFieldMax = 64
	// KeyMaxCodePoints bounds a concurrency_key, in Unicode code points.
	KeyMaxCodePoints = 191
	// ErrorCodeMax and ErrorMessageMax bound a result's error, in UTF-16 units as the schema counts.
	ErrorCodeMax    = 128
	ErrorMessageMax = 4096
	// AgentMax bounds hello's agent.
	AgentMax = 64
	// StepKeyMax bounds a workflow step key.
	StepKeyMax = 64
	// PriorityMax is the largest task priority.
	PriorityMax = 9
	// MaxJSONDepth is the deepest nesting of a worker frame the gateway accepts.
	MaxJSONDepth = 512
)

// Agent is what hello's agent says unless Options.Agent or Registration.Agent does.
const Agent = "orbit-worker-sdk-go/0.1.0"
