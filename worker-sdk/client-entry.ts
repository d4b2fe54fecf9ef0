// `@orbit/worker-sdk/client`: the HTTP facade client (submit, read, manage) and its error class.
export { createClient } from './http-client.js';
export type { ClientOptions, CommandOptions, CreateSubscriptionBody, ListTasksQuery, OrbitClient, Revision } from './http-client.js';
export type { ListWorkflowRunsQuery } from './workflow-client.js';
// The resources and bodies as the wire has them (the server's own views and schemas).
export type {
  Attempt,
  BatchSubmitResult,
  Delivery,
  DeliveryRecord,
  FireOutcome,
  Queue,
  ResultEvent,
  Schedule,
  ScheduleCalendar,
  ScheduleFire,
  ScheduleTaskTemplate,
  ScheduleVersion,
  Subscription,
  Task,
  TaskResult,
} from '@orbit/protocol/http-views';
export type { CreateScheduleBody, ScheduleVersionInput, SubmitBatchItem } from '@orbit/protocol/http-schemas';
export type {
  Workflow,
  WorkflowVersion,
  WorkflowStep,
  WorkflowStepTask,
  WorkflowSignalSpec,
  WorkflowRun,
  WorkflowRunSummary,
  WorkflowRunStep,
  WorkflowStepError,
  WorkflowStepPayload,
  TaskWorkflowRef,
  WorkflowVersionReceipt,
  WorkflowReceipt,
  WorkflowRunReceipt,
  WorkflowList,
  WorkflowVersionList,
  WorkflowRunList,
} from '@orbit/protocol/workflow-views';
export type {
  CreateWorkflowBody,
  WorkflowVersionInput,
  WorkflowStepInput,
  StartWorkflowRunBody,
  CancelWorkflowRunBody,
  SendSignalBody,
} from '@orbit/protocol/workflow-schemas';
export { OrbitApiError, isErrorCode, isOrbitSdkError } from './errors.js';
