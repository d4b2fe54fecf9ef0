// What each credential scope grants, for the OpenAPI security scheme; the same as the scope table
// of docs/http-api.md "Authentication and scopes". Typed by Scope, so a new scope needs its line.
import type { Scope } from '../admin/access.js';

export const SCOPE_DOCS: Record<Scope, string> = {
  'tasks:submit': 'submit tasks (single and batch), cancel and resolve tasks',
  'tasks:read': 'read tasks and attempts, queue stats; read schedules, workflows and workflow runs',
  'queues:manage': 'create, read, pause, resume and retire queues; queue stats; list connected workers',
  'events:manage': 'create, pause, resume and retire result-stream subscriptions',
  'events:read': "read the credential's subscriptions, lease and acknowledge their deliveries",
  'workers:connect': 'open a worker session on the WebSocket (with `workers:consume`; no HTTP operation)',
  'workers:consume': 'receive tasks in a worker session (with `workers:connect`; no HTTP operation)',
  'schedules:manage': 'create, publish, pause, resume, trigger, retire and read schedules',
  'workflows:manage': 'create, publish and retire workflow definitions; read workflows and runs',
  'workflows:run': 'start runs, send them commands and signals; read workflows and runs',
};

export function scopeTable(): string {
  const rows = (Object.entries(SCOPE_DOCS) as [Scope, string][]).map(([s, d]) => `| \`${s}\` | ${d} |`);
  return ['| scope | grants |', '| --- | --- |', ...rows].join('\n');
}
