// Public API of the Orbit worker SDK.
export { createWorker, defaultWorkerId, Worker } from './worker.js';
export type { HandlerFn, HandlerSpec, Logger, TaskContext, TaskInfo, WorkerOptions } from './worker.js';
export { connect, connectUrl, helloFrame, WorkerConnection, SDK_AGENT } from './connection.js';
export type { ConnectOptions, ConnectionEvent, HandlerRegistration, KnownAttempt, Registration, ResultInput } from './connection.js';
export { createClient } from './http-client.js';
export type {
  Attempt,
  ClientOptions,
  CommandOptions,
  CreateSubscriptionBody,
  Delivery,
  DeliveryRecord,
  ListTasksQuery,
  OrbitClient,
  Queue,
  ResultEvent,
  Revision,
  Subscription,
  Task,
  TaskResult,
  Schedule,
  ScheduleVersion,
  ScheduleFire,
  ScheduleCalendar,
  ScheduleTaskTemplate,
  FireOutcome,
  CreateScheduleBody,
  ScheduleVersionInput,
} from './http-client.js';
export { createFencedResource } from './fenced-resource.js';
export type { FencedResource, FencedResourceOptions, FencedWrite, FencedWriteResult } from './fenced-resource.js';
export {
  ConnectionClosedError,
  GatewayError,
  LeaseLostError,
  OperationConflictError,
  OrbitApiError,
  PermanentError,
  ProtocolViolation,
  RetryableError,
  StaleTokenError,
  UnknownOutcomeError,
} from './errors.js';
export { MAX_OUTPUT_BYTES } from './outcome.js';
