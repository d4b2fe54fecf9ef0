// `@orbit/worker-sdk/worker`: everything a worker process needs — createWorker, the handler
// types, the error classes a handler throws, and the low-level connection for custom loops.
export { createWorker, defaultWorkerId, Worker } from './worker.js';
export type { Handler, HandlerFn, HandlerMap, HandlerSpec, Logger, ReconnectPolicy, TaskContext, TaskInfo, WorkerEvents, WorkerOptions } from './worker.js';
export { connect, connectUrl, helloFrame, WorkerConnection, SDK_AGENT } from './connection.js';
export type { ConnectOptions, ConnectionEvents, HandlerRegistration, KnownAttempt, Registration, ResultInput } from './connection.js';
export {
  ConnectionClosedError,
  GatewayError,
  LeaseLostError,
  PermanentError,
  ProtocolViolation,
  RESULT_NOT_SENT,
  RetryableError,
  UnknownOutcomeError,
  isOrbitSdkError,
} from './errors.js';
export { MAX_OUTPUT_BYTES } from './handler-result.js';
export { stepHandler } from './step-handler.js';
export type { StepArgs, StepPayload } from './step-handler.js';
