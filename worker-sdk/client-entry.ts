// `@orbit/worker-sdk/client`: the HTTP facade client (submit, read, manage) and its error class.
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
  BatchSubmitResult,
  SubmitBatchItem,
  Schedule,
  ScheduleVersion,
  ScheduleFire,
  ScheduleCalendar,
  ScheduleTaskTemplate,
  FireOutcome,
  CreateScheduleBody,
  ScheduleVersionInput,
} from './http-client.js';
export { OrbitApiError, isErrorCode, isOrbitSdkError } from './errors.js';
