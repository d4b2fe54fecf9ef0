// The prose of the OpenAPI document: its description, with the table of every error code, and the
// tags that group the operations in a rendered reference.
import { ERROR_CODES, type ErrorCode } from '@orbit/protocol/errors';

/** Tags by the resource a path names, in alphabetical order (the order a reference lists them). */
export const TAGS: { name: string; description: string; prefixes: string[] }[] = [
  {
    name: 'Documents',
    description: 'The machine-readable API documents and the rendered reference; public (docs/http-api.md "API documents").',
    prefixes: ['/v1/openapi.json', '/v1/asyncapi.json', '/v1/docs'],
  },
  {
    name: 'Health',
    description: 'Liveness, readiness and metrics of a gateway node; public (docs/operations.md).',
    prefixes: ['/healthz', '/readyz', '/metrics'],
  },
  {
    name: 'Queues',
    description: 'Queues: creation, settings, pause and resume, retirement, statistics (docs/http-api.md "Queues").',
    prefixes: ['/v1/queues'],
  },
  {
    name: 'Schedules',
    description: 'Schedules: versioned calendars that create tasks, each fire exactly once (docs/schedules.md).',
    prefixes: ['/v1/schedules'],
  },
  {
    name: 'Subscriptions',
    description: 'Result-stream subscriptions: the outcomes of tasks as leased, acknowledged deliveries (docs/http-api.md "Result stream and subscriptions").',
    prefixes: ['/v1/subscriptions'],
  },
  {
    name: 'Tasks',
    description: 'Tasks and their attempts: submit, read, cancel, resolve (docs/http-api.md "Tasks").',
    prefixes: ['/v1/tasks', '/v1/attempts'],
  },
  {
    name: 'Workers',
    description: 'Connected worker sessions. Workers themselves speak the WebSocket protocol of /v1/asyncapi.json (docs/worker-protocol.md).',
    prefixes: ['/v1/workers'],
  },
  {
    name: 'Workflow runs',
    description: 'Runs of a workflow: start, pause, resume, cancel, signal, read (docs/workflows.md "Runs").',
    prefixes: ['/v1/workflow-runs', '/v1/workflows/{id}/runs'],
  },
  {
    name: 'Workflows',
    description: 'Workflow definitions: versioned graphs of steps, created, published and retired (docs/workflows.md).',
    prefixes: ['/v1/workflows'],
  },
];

/** The longest prefix wins, so a run started under /v1/workflows/{id}/runs is a run. */
export function tagOf(template: string): string {
  let best: { name: string; length: number } | null = null;
  for (const t of TAGS) {
    for (const p of t.prefixes) {
      const hit = template === p || template.startsWith(p + '/') || template.startsWith(p + ':');
      if (hit && (!best || p.length > best.length)) best = { name: t.name, length: p.length };
    }
  }
  if (!best) throw new Error(`no OpenAPI tag for ${template}`);
  return best.name;
}

function errorTable(): string {
  const rows = (Object.entries(ERROR_CODES) as [ErrorCode, (typeof ERROR_CODES)[ErrorCode]][]).map(
    ([code, e]) => `| \`${code}\` | ${e.http} | ${e.retryable ? 'yes' : 'no'} | ${e.doc} |`,
  );
  return ['| code | HTTP status | retryable | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

export function apiDescription(): string {
  return [
    'Tasks, attempts, queues, schedules, workflows and result-stream subscriptions of one Orbit namespace (docs/http-api.md).',
    'Every response is an envelope `{request_id, data}` or `{request_id, error: {code, message, details?}}`, except the metrics, the API documents and the reference page; uint64 values are decimal strings. Workers use the WebSocket protocol described by /v1/asyncapi.json.',
    '## Authentication\n\n`Authorization: Bearer <token>`. Each operation names the scopes that grant it in its description and in `x-orbit-scopes` (any one suffices); the security scheme lists what every scope grants. Credentials are made with the `orbit-admin` command line, not over HTTP (docs/operations.md).',
    '## Idempotent commands\n\nEvery POST that creates or changes something requires an `Idempotency-Key` header: the same key and content replay the stored receipt, the same key with other content is `IDEMPOTENCY_CONFLICT` (docs/http-api.md "Idempotent commands").',
    `## Error codes\n\nThe \`code\` is the contract, the message is for people. Each operation lists the codes it can answer in its responses and in \`x-orbit-error-codes\`; the full meaning of each is in docs/errors.md. **Retryable** codes may succeed later unchanged: retry with the same \`Idempotency-Key\`.\n\n${errorTable()}`,
  ].join('\n\n');
}
